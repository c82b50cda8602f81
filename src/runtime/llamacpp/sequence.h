// Sequence: one generation job while the scheduler runs it — its tokens
// (the prompt, then what it generated), how many of them are in the KV
// cache, its sampler chain, its output text and the update it is building.
// Decides when the job ends (an end-of-generation token unless ignore_eos,
// a stop token or string, max_tokens, the context) and streams to its sink.
//
// Threading: the scheduler thread's alone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/llamacpp/vocab.h"
#include "runtime/streaming_generator.h"
#include "runtime/text_stream.h"

namespace shoal::llamacpp {

// A llama_sampler chain for `config`: greedy at temperature 0, else top-k,
// temperature, top-p and a draw seeded by `seed`.
SamplerPtr MakeSampler(const SamplingConfig& config, uint64_t seed);

class Sequence {
 public:
  // `format`: the sampler that holds the output to the job's format
  // (output_grammars.h; null: text).
  Sequence(uint64_t handle, GenerationJob job, std::vector<int32_t> prompt, SamplerPtr format,
           StreamingGenerator::Sink sink, const llama_vocab* vocab, uint32_t context);

  uint64_t handle() const { return handle_; }
  // Tokens not yet in the cache (the prompt's rest, or the last sampled one).
  uint32_t uncached() const { return static_cast<uint32_t>(tokens_.size()) - cached_; }
  uint32_t cached() const { return cached_; }
  const int32_t* next_tokens() const { return tokens_.data() + cached_; }
  void Cached(uint32_t n) { cached_ += n; }

  // Samples the next token from the logits at batch row `row` of `ctx` and
  // streams what it adds; returns true when the job is over (its final
  // update sent).
  bool Sample(llama_context* ctx, int32_t row);
  // Ends it now: a final update with `reason` ("cancelled"), or failed with
  // `status`.
  void End(Status status, std::string reason);

 private:
  // Every token of the vocabulary with its logit, in candidates_.
  llama_token_data_array Candidates(const float* logits);
  // The next token under the format (a Status when none can continue it).
  Result<int32_t> SampleHeld(const float* logits);
  // The next token from `logits` (adjusted: not the context's own).
  int32_t SampleFree(const float* logits);
  void Emit(bool final);

  const uint64_t handle_;
  const GenerationJob job_;
  const StreamingGenerator::Sink sink_;
  const llama_vocab* const vocab_;
  const uint32_t context_;
  const uint32_t prompt_tokens_;
  const std::unordered_set<int32_t> stop_ids_;
  std::vector<int32_t> tokens_;
  uint32_t cached_ = 0;
  SamplerPtr sampler_;
  SamplerPtr format_;                          // null: text
  std::vector<llama_token_data> candidates_;  // Candidates' scratch
  // The job's penalties, biases and min_tokens on the logits before a
  // token is picked (null: none asked); the tokens min_tokens holds back.
  std::unique_ptr<TokenPenalties> penalties_;
  std::unordered_set<int32_t> held_back_;
  std::vector<float> adjusted_;  // the adjusted logits' scratch
  TextStream text_;  // whole characters, stop strings held back (runtime/text_stream.h)
  GenerationUpdate pending_;
};

}  // namespace shoal::llamacpp
