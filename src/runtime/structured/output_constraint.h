// OutputConstraint: one sequence's output held to a grammar, token by token.
// Next picks with the sequence's own sampler among the tokens the grammar
// allows; Accept moves the grammar past the token picked. The sequence
// keeps its grammar state as a value: the shared TokenGrammar's numbered
// states and tables may start over between steps.
//
// Picking: when the sampler draws from the whole distribution (greedy, or
// temperature alone) its free pick is checked first — one walk of a few
// bytes — and kept if allowed; only a refused pick costs the mask of every
// allowed token (token_grammar.h), and the draw is made again from the
// allowed tokens alone. The result is distributed exactly as a draw from
// the allowed tokens' renormalised probabilities (P(t) = p(t) + (1 − p(A))
// p(t)/p(A) = p(t)/p(A)). With top-k or top-p the mask comes first, then
// the truncation, as other servers order them. The logprob reported is the
// model's own, before the mask.
//
// The sequence's stop tokens (end of sequence, stop_token_ids) are allowed
// only where the output is a whole sentence of the grammar; where nothing
// can follow (complete()), the engine ends the sequence itself.
//
// Threading: one sequence's; used from its engine's thread, as its
// TokenGrammar is.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "runtime/sampler.h"
#include "runtime/structured/grammar_state.h"
#include "runtime/structured/token_grammar.h"

namespace shoal::structured {

class OutputConstraint {
 public:
  explicit OutputConstraint(std::shared_ptr<TokenGrammar> grammar);

  // INFERENCE_ERROR when no token of the vocabulary continues the output.
  Result<int32_t> Next(Sampler& sampler, const float* logits, size_t vocab,
                       const std::unordered_set<int32_t>& stop_ids, float* logprob);
  // Moves past `token`, which Next picked.
  void Accept(int32_t token, const std::unordered_set<int32_t>& stop_ids);
  // Nothing may follow: the output is a whole sentence and cannot go on.
  bool complete() const { return !state_.can_continue(); }

 private:
  std::shared_ptr<TokenGrammar> grammar_;
  GrammarState state_;
  std::vector<float> masked_;  // scratch: the logits with refused tokens at -inf
};

}  // namespace shoal::structured
