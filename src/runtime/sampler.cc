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

size_t Sampler::Truncate(const float* logits, size_t vocab, float max_logit) {
  const float inv_t = 1.0f / config_.temperature;
  auto weight = [&](float logit) { return std::exp(static_cast<double>((logit - max_logit) * inv_t)); };
  const int32_t top_k = config_.top_k;
  const float top_p = config_.top_p;
  // Candidates by descending logit: the top k, then of those the fewest
  // whose mass reaches p. The nucleus is found by widening a partial sort:
  // it rarely needs more than a few hundred of 150k tokens.
  candidates_.resize(vocab);
  for (size_t i = 0; i < vocab; ++i) candidates_[i] = {logits[i], static_cast<int32_t>(i)};
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t keep = top_k > 0 ? std::min<size_t>(top_k, vocab) : vocab;
  if (top_p >= 1.0f) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), by_logit);
    return keep;
  }
  double total = 0;
  for (size_t i = 0; i < vocab; ++i) total += weight(logits[i]);
  double mass = 0;
  size_t sorted = 0, nucleus = keep;
  bool reached = false;
  for (size_t width = std::min<size_t>(256, keep); sorted < keep && !reached; width = std::min(keep, width * 16)) {
    std::partial_sort(candidates_.begin() + sorted, candidates_.begin() + width, candidates_.end(), by_logit);
    for (; sorted < width && !reached; ++sorted) {
      mass += weight(candidates_[sorted].first) / total;
      if (mass >= top_p) {
        nucleus = sorted + 1;
        reached = true;
      }
    }
  }
  return std::min(keep, nucleus);
}

int32_t Sampler::Draw(const float* logits, size_t vocab, float max_logit) {
  const float inv_t = 1.0f / config_.temperature;
  auto weight = [&](float logit) { return std::exp(static_cast<double>((logit - max_logit) * inv_t)); };
  if (config_.top_k == 0 && config_.top_p >= 1.0f) {  // the whole distribution: one pass, no sort
    double total = 0;
    for (size_t i = 0; i < vocab; ++i) total += weight(logits[i]);
    double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
    for (size_t i = 0; i < vocab; ++i) {
      u -= weight(logits[i]);
      if (u <= 0) return static_cast<int32_t>(i);
    }
    return static_cast<int32_t>(vocab - 1);
  }
  const size_t keep = Truncate(logits, vocab, max_logit);
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += weight(candidates_[i].first);
  double u = std::uniform_real_distribution<double>(0.0, kept)(rng_);
  for (size_t i = 0; i < keep; ++i) {
    u -= weight(candidates_[i].first);
    if (u <= 0) return candidates_[i].second;
  }
  return candidates_[keep - 1].second;
}

void Sampler::Distribution(const float* logits, size_t vocab, std::vector<float>* probs) {
  probs->assign(vocab, 0.0f);
  const size_t argmax = argmax_(logits, vocab);
  if (greedy()) {
    (*probs)[argmax] = 1.0f;
    return;
  }
  const float max_logit = logits[argmax];
  const float inv_t = 1.0f / config_.temperature;
  auto weight = [&](float logit) { return std::exp(static_cast<double>((logit - max_logit) * inv_t)); };
  double total = 0;
  if (config_.top_k == 0 && config_.top_p >= 1.0f) {
    for (size_t i = 0; i < vocab; ++i) total += weight(logits[i]);
    for (size_t i = 0; i < vocab; ++i) (*probs)[i] = static_cast<float>(weight(logits[i]) / total);
    return;
  }
  const size_t keep = Truncate(logits, vocab, max_logit);
  for (size_t i = 0; i < keep; ++i) total += weight(candidates_[i].first);
  for (size_t i = 0; i < keep; ++i) {
    (*probs)[candidates_[i].second] = static_cast<float>(weight(candidates_[i].first) / total);
  }
}

int32_t Sampler::DrawFrom(const std::vector<float>& weights) {
  double total = 0;
  for (float w : weights) total += w;
  double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
  size_t last = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    last = i;
    u -= weights[i];
    if (u <= 0) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);
}

int32_t Sampler::Verify(const float* logits, size_t vocab, int32_t drafted, const std::vector<float>& q,
                        bool* accepted) {
  if (greedy()) {
    const int32_t token = static_cast<int32_t>(argmax_(logits, vocab));
    *accepted = token == drafted;
    return token;
  }
  Distribution(logits, vocab, &p_);
  const double p_d = p_[drafted];
  const double q_d = q.empty() ? 1.0 : q[drafted];
  if (q_d > 0 && std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * q_d < p_d) {
    *accepted = true;
    return drafted;
  }
  *accepted = false;
  // The residual max(0, p - q): what p has that the draft did not give.
  double left = 0;
  for (size_t i = 0; i < vocab; ++i) {
    p_[i] = std::max(0.0f, p_[i] - (q.empty() ? (static_cast<int32_t>(i) == drafted ? 1.0f : 0.0f) : q[i]));
    left += p_[i];
  }
  if (left <= 0) {  // p == q up to rounding: the draft was always right
    *accepted = true;
    return drafted;
  }
  return DrawFrom(p_);
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
