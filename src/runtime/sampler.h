// Sampler: picks the next token from a sequence's logits — greedy, or
// temperature, top-k and top-p (nucleus) sampling from a per-sequence
// random stream, so a seed reproduces a sequence token for token. Part of
// the runtime contract: the worker gets its samplers from the Generator
// (generator.h NewSampler), so a runtime may bring a faster greedy pick
// (the native one brings its vectorized ArgMax) or sample where its logits
// are.
//
// The log-probability reported for the chosen token is the model's own
// (log-softmax of the raw logits), before temperature and truncation, as
// OpenAI-compatible servers report it.
//
// Threading: a Sampler is one sequence's; not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace shoal {

struct SamplingConfig {
  float temperature = 1.0f;  // 0: greedy
  float top_p = 1.0f;        // (0, 1]
  int32_t top_k = 0;         // 0: off
};

// log-softmax(logits)[token]; `max_logit` is the largest of them.
float TokenLogProb(const float* logits, size_t vocab, int32_t token, float max_logit);

class Sampler {
 public:
  // The index of the largest of `n` values (the first, on a tie).
  using ArgMaxFn = size_t (*)(const float* x, size_t n);

  // `argmax` null: a portable one.
  Sampler(const SamplingConfig& config, uint64_t seed, ArgMaxFn argmax = nullptr);

  // The next token; `logprob` (optional) gets its log-probability.
  int32_t Next(const float* logits, size_t vocab, float* logprob);

  // Speculative decoding: the next token given a drafted one, by the rule
  // that keeps this sampler's distribution p exact (Leviathan et al. 2023,
  // Chen et al. 2023): the draft is kept with probability
  // min(1, p(d) / q(d)); otherwise the token is drawn from
  // max(0, p - q), renormalized. `q` is the draft's distribution over the
  // vocabulary; empty means the draft was certain (prompt lookup: q is all
  // on d). Greedy: the argmax, kept when it is the draft. `accepted` says
  // whether the draft was kept.
  int32_t Verify(const float* logits, size_t vocab, int32_t drafted, const std::vector<float>& q, bool* accepted);
  // The distribution Next draws from — temperature, top-k and top-p
  // applied; greedy: all on the argmax — as a probability per token id.
  void Distribution(const float* logits, size_t vocab, std::vector<float>* probs);
  // A token drawn from `weights` (one per id, non-negative, not all 0).
  int32_t DrawFrom(const std::vector<float>& weights);

  const SamplingConfig& config() const { return config_; }
  bool greedy() const { return config_.temperature <= 0 || config_.top_k == 1; }
  // Whether Next picks from the whole distribution as it is (greedy, or
  // temperature alone): then a pick refused by a constraint may simply be
  // drawn again from the allowed tokens, and the result is still a draw
  // from the allowed part of the distribution (runtime/structured).
  bool untruncated() const {
    return config_.temperature <= 0 || config_.top_k == 1 || (config_.top_k == 0 && config_.top_p >= 1.0f);
  }

 private:
  int32_t Draw(const float* logits, size_t vocab, float max_logit);
  // Sorts the top of candidates_ by logit and returns how many of them
  // top-k and top-p keep (the whole vocabulary when neither truncates).
  size_t Truncate(const float* logits, size_t vocab, float max_logit);

  const SamplingConfig config_;
  const ArgMaxFn argmax_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;  // scratch
  std::vector<float> p_;                               // scratch (Verify)
};

}  // namespace shoal
