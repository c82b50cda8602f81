// Sampler: picks the next token from a sequence's logits — greedy, or
// temperature, top-k and top-p (nucleus) sampling from a per-sequence
// random stream, so a seed reproduces a sequence token for token.
//
// The log-probability reported for the chosen token is the model's own
// (log-softmax of the raw logits), before temperature and truncation, as
// OpenAI-compatible servers report it.
//
// Threading: a Sampler is one sequence's; not shared.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "wire/generate.h"

namespace shoal::worker {

class Sampler {
 public:
  Sampler(const wire::SamplingParams& params, uint64_t seed);

  // The next token; `logprob` (optional) gets its log-probability.
  int32_t Next(const float* logits, size_t vocab, float* logprob);

 private:
  int32_t Draw(const float* logits, size_t vocab, float max_logit);

  float temperature_;
  float top_p_;
  int32_t top_k_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // scratch
};

// The seed a request without one samples with: derived from its request
// id, so a redelivered request regenerates the same tokens.
uint64_t SeedFromRequestId(std::string_view request_id);

}  // namespace shoal::worker
