#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shoal {
namespace {

size_t PortableArgMax(const float* x, size_t n) {
  return n == 0 ? 0 : static_cast<size_t>(std::max_element(x, x + n) - x);
}

}  // namespace

float TokenLogProb(const float* logits, size_t vocab, int32_t token, float max_logit) {
  double z = 0;
  for (size_t i = 0; i < vocab; ++i) z += std::exp(static_cast<double>(logits[i]) - max_logit);
  return static_cast<float>(logits[token] - max_logit - std::log(z));
}

Sampler::Sampler(const SamplingConfig& config, uint64_t seed, ArgMaxFn argmax)
    : config_(config), argmax_(argmax ? argmax : PortableArgMax), rng_(seed) {}

int32_t Sampler::Draw(const float* logits, size_t vocab, float max_logit) {
  const float inv_t = 1.0f / config_.temperature;
  auto weight = [&](float logit) { return std::exp(static_cast<double>((logit - max_logit) * inv_t)); };
  const int32_t top_k = config_.top_k;
  const float top_p = config_.top_p;
  if (top_k == 0 && top_p >= 1.0f) {  // the whole distribution: one pass, no sort
    double total = 0;
    for (size_t i = 0; i < vocab; ++i) total += weight(logits[i]);
    double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
    for (size_t i = 0; i < vocab; ++i) {
      u -= weight(logits[i]);
      if (u <= 0) return static_cast<int32_t>(i);
    }
    return static_cast<int32_t>(vocab - 1);
  }
  // Candidates by descending logit: the top k, then of those the fewest
  // whose mass reaches p. The nucleus is found by widening a partial sort:
  // it rarely needs more than a few hundred of 150k tokens.
  candidates_.resize(vocab);
  for (size_t i = 0; i < vocab; ++i) candidates_[i] = {logits[i], static_cast<int32_t>(i)};
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t keep = top_k > 0 ? std::min<size_t>(top_k, vocab) : vocab;
  if (top_p >= 1.0f) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), by_logit);
  } else {
    double total = 0;
    for (size_t i = 0; i < vocab; ++i) total += weight(logits[i]);
    double mass = 0;
    size_t sorted = 0, nucleus = keep;
    bool reached = false;
    for (size_t width = std::min<size_t>(256, keep); sorted < keep && !reached;
         width = std::min(keep, width * 16)) {
      std::partial_sort(candidates_.begin() + sorted, candidates_.begin() + width, candidates_.end(), by_logit);
      for (; sorted < width && !reached; ++sorted) {
        mass += weight(candidates_[sorted].first) / total;
        if (mass >= top_p) {
          nucleus = sorted + 1;
          reached = true;
        }
      }
    }
    keep = std::min(keep, nucleus);
  }
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += weight(candidates_[i].first);
  double u = std::uniform_real_distribution<double>(0.0, kept)(rng_);
  for (size_t i = 0; i < keep; ++i) {
    u -= weight(candidates_[i].first);
    if (u <= 0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

int32_t Sampler::Next(const float* logits, size_t vocab, float* logprob) {
  const int32_t argmax = static_cast<int32_t>(argmax_(logits, vocab));
  const float max_logit = logits[argmax];
  int32_t chosen = argmax;
  if (config_.temperature > 0 && config_.top_k != 1) chosen = Draw(logits, vocab, max_logit);
  if (logprob) *logprob = TokenLogProb(logits, vocab, chosen, max_logit);
  return chosen;
}

}  // namespace shoal
