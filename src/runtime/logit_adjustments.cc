#include "runtime/logit_adjustments.h"

#include <limits>

namespace shoal {

std::vector<std::string_view> AskedAdjustments(const LogitAdjustments& a) {
  const bool asked[] = {a.presence_penalty != 0, a.frequency_penalty != 0, a.repetition_penalty != 1,
                        !a.logit_bias.empty(), a.min_tokens > 0};
  std::vector<std::string_view> out;
  for (size_t i = 0; i < std::size(asked); ++i) {
    if (asked[i]) out.push_back(kLogitAdjustmentNames[i]);
  }
  return out;
}

TokenPenalties::TokenPenalties(LogitAdjustments adjust, std::span<const int32_t> prompt) : adjust_(std::move(adjust)) {
  if (adjust_.repetition_penalty != 1) seen_.insert(prompt.begin(), prompt.end());
}

void TokenPenalties::Apply(float* logits, size_t vocab, uint32_t generated,
                           const std::unordered_set<int32_t>& stop_ids) const {
  auto in_vocab = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < vocab; };
  for (auto [token, bias] : adjust_.logit_bias) {
    if (in_vocab(token)) logits[token] += bias;
  }
  if (adjust_.presence_penalty != 0 || adjust_.frequency_penalty != 0) {
    for (auto [token, count] : counts_) {
      if (in_vocab(token)) logits[token] -= adjust_.frequency_penalty * count + adjust_.presence_penalty;
    }
  }
  if (adjust_.repetition_penalty != 1) {
    const float r = adjust_.repetition_penalty;
    for (int32_t token : seen_) {
      if (!in_vocab(token)) continue;
      float& l = logits[token];
      l = l > 0 ? l / r : l * r;
    }
  }
  if (generated < adjust_.min_tokens) {
    for (int32_t token : stop_ids) {
      if (in_vocab(token)) logits[token] = -std::numeric_limits<float>::infinity();
    }
  }
}

void TokenPenalties::Add(int32_t token) {
  ++counts_[token];
  if (adjust_.repetition_penalty != 1) seen_.insert(token);
}

}  // namespace shoal
