// The `upstream` runtime: a model served by an existing OpenAI-compatible
// server (vLLM, SGLang, TEI, llama-server, Ollama), with Shoal's queue,
// batching, admission, auth, limits, metrics and retries in front of it
// (docs/architecture.md, "The upstream runtime"). It runs in the worker: it holds no weights
// and computes nothing, so there is nothing a process of its own would
// isolate.
//
//   encode    each batch the worker forms (items of many requests) is one
//             POST /embeddings with the texts as `input`
//   generate  each job one streamed POST /completions (a prompt) or
//             /chat/completions (messages), relayed chunk by chunk
//             (upstream_streams.h); the upstream batches the sequences
//
// Load asks GET /models and refuses a server that does not list the model
// or refuses the key; one that cannot be reached now still loads (its
// requests wait in the queue for it), and registration's test request is
// what refuses it. Per input, what the OpenAI API cannot say is refused:
// `truncate` (the upstream decides what an over-long input does), logprobs,
// adapters. `normalize: false` gives the upstream's vectors as they come.
//
// Threading: Encode may run on several executor threads at once (each call
// its own HTTP request, connections kept alive in a pool).
#pragma once

#include "runtime/runtime.h"

namespace shoal {

class UpstreamRuntime final : public Runtime {
 public:
  std::string_view name() const override { return "upstream"; }
  int api_version() const override { return kRuntimeApiVersion; }
  std::vector<Task> tasks() const override { return {Task::kEncode, Task::kGenerate}; }
  bool streams_generation() const override { return true; }
  // No output_formats: response_format goes on to the server with messages
  // only (OpenAI's completions have none), so not every job can be held.
  bool counts_tokens() const override { return false; }  // the server says text
  // OpenAI's own, passed on as the request's fields: every
  // OpenAI-compatible server applies them. vLLM's repetition_penalty and
  // min_tokens are not OpenAI's (llama-server, for one, ignores them).
  std::vector<std::string> logit_adjustments() const override;
  Result<std::unique_ptr<Model>> Load(const ModelConfig& config, const LoadContext& ctx) override;
};

}  // namespace shoal
