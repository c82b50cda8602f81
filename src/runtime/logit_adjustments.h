// LogitAdjustments: what a request asks to change in the model's logits
// before a token is picked — OpenAI's presence_penalty, frequency_penalty
// and logit_bias, and vLLM's repetition_penalty and min_tokens — and
// TokenPenalties, one sequence's running application of them.
//
// Definitions (as OpenAI and vLLM apply them):
//   logit[t] += logit_bias[t]
//   logit[t] -= frequency_penalty * count(t) + presence_penalty * (count(t) > 0)
//                 (count: t's occurrences in the output so far)
//   repetition_penalty r (1: off), for every t in the prompt or the output:
//   logit[t] = logit[t] > 0 ? logit[t] / r : logit[t] * r
//   min_tokens: until that many tokens are out, the stop tokens (end of
//   sequence, stop_token_ids) are refused.
// The log-probability reported for a token stays the model's own, before
// these (sampler.h).
//
// Threading: TokenPenalties is one sequence's; not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace shoal {

struct LogitAdjustments {
  float presence_penalty = 0;    // [-2, 2]
  float frequency_penalty = 0;   // [-2, 2]
  float repetition_penalty = 1;  // (0, 2]
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, [-100, 100]
  uint32_t min_tokens = 0;

  bool any() const {
    return presence_penalty != 0 || frequency_penalty != 0 || repetition_penalty != 1 || !logit_bias.empty() ||
           min_tokens > 0;
  }
};

// The adjustments by the names requests and the runtime protocol give them.
inline constexpr std::string_view kLogitAdjustmentNames[] = {"presence_penalty", "frequency_penalty",
                                                             "repetition_penalty", "logit_bias", "min_tokens"};
// The names of those `a` asks for, in kLogitAdjustmentNames' order.
std::vector<std::string_view> AskedAdjustments(const LogitAdjustments& a);
// The first adjustment `a` asks for that is not among `applied` (names),
// or "" when there is none.
template <class Names>
std::string FirstUnapplied(const LogitAdjustments& a, const Names& applied) {
  for (std::string_view asked : AskedAdjustments(a)) {
    bool found = false;
    for (const auto& name : applied) found = found || std::string_view(name) == asked;
    if (!found) return std::string(asked);
  }
  return "";
}

class TokenPenalties {
 public:
  // `prompt`: the repetition penalty's tokens besides the output's.
  TokenPenalties(LogitAdjustments adjust, std::span<const int32_t> prompt);

  // `logits` (vocab of them) adjusted for the next token, `generated` tokens
  // into the output; `stop_ids` are the tokens min_tokens holds back.
  void Apply(float* logits, size_t vocab, uint32_t generated, const std::unordered_set<int32_t>& stop_ids) const;
  // The output grew by `token`.
  void Add(int32_t token);

 private:
  const LogitAdjustments adjust_;
  std::unordered_map<int32_t, uint32_t> counts_;  // output tokens
  std::unordered_set<int32_t> seen_;              // prompt and output tokens (repetition penalty only)
};

}  // namespace shoal
