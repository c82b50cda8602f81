// LlamaCppRuntime (`runtime: llamacpp`): GGUF models through llama.cpp —
// embedders (task encode: llama.cpp's pooled embeddings) and decoders (task
// generate: llama.cpp's continuous batching behind a StreamingGenerator).
// Both tokenize. The llama.cpp is the prebuilt one of node-llama-cpp
// (node_modules); the sidecar program shoal-llamacpp serves this runtime
// over the runtime protocol.
//
// A model's `path` is its directory, holding one .gguf (or several, with
// option `file` naming the one). Options (`llamacpp:` in the profile):
// `file`, `context` (positions per sequence; default the model's training
// context, at most 4096), `threads` (default the worker's share).
//
// Threading: Load may run on several threads at once; the models' own
// headers say theirs.
#pragma once

#include "runtime/runtime.h"

namespace shoal::llamacpp {

class LlamaCppRuntime final : public Runtime {
 public:
  std::string_view name() const override { return "llamacpp"; }
  int api_version() const override { return 17; }
  std::vector<Task> tasks() const override { return {Task::kEncode, Task::kTokenize, Task::kGenerate}; }
  Result<std::unique_ptr<Model>> Load(const ModelConfig& config, const LoadContext& ctx) override;
  bool streams_generation() const override { return true; }  // llama.cpp batches its sequences
  std::vector<OutputFormat::Kind> output_formats() const override {
    return {OutputFormat::Kind::kJsonObject, OutputFormat::Kind::kJsonSchema};  // its grammar sampler
  }
  std::vector<std::string> logit_adjustments() const override {  // Shoal's TokenPenalties on its logits
    return {std::begin(kLogitAdjustmentNames), std::end(kLogitAdjustmentNames)};
  }
};

}  // namespace shoal::llamacpp
