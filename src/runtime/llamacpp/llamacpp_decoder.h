// LlamaCppDecoder: a GGUF decoder serving generate (through its
// StreamingGenerator: scheduler.h, llama.cpp's continuous batching) and
// Tokenize.
//
// Threading: Tokenize from any thread; the generator's own rules hold for
// generation. The model outlives the scheduler (declared first, destroyed
// last), which drains its jobs when destroyed.
#pragma once

#include <memory>

#include "runtime/llamacpp/prompt.h"
#include "runtime/llamacpp/scheduler.h"
#include "runtime/llamacpp/vocab.h"
#include "runtime/runtime.h"

namespace shoal::llamacpp {

class LlamaCppDecoder final : public Model {
 public:
  // Its steps compute on `pool`'s threads.
  static Result<std::unique_ptr<Model>> Create(ModelPtr model, const ModelConfig& config, uint32_t context,
                                               std::unique_ptr<Threadpool> pool);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return memory_bytes_; }
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override;
  StreamingGenerator* streaming_generator() override { return scheduler_.get(); }

 private:
  LlamaCppDecoder(ModelPtr model, const ModelConfig& config) : model_(std::move(model)), config_(config) {}

  ModelPtr model_;
  const ModelConfig config_;
  std::unique_ptr<PromptBuilder> prompts_;
  std::unique_ptr<Scheduler> scheduler_;
  size_t memory_bytes_ = 0;
};

}  // namespace shoal::llamacpp
