#include "runtime/structured/output_constraint.h"

#include <algorithm>
#include <limits>

namespace shoal::structured {

OutputConstraint::OutputConstraint(std::shared_ptr<TokenGrammar> grammar)
    : grammar_(std::move(grammar)), state_(grammar_->Start()) {}

Result<int32_t> OutputConstraint::Next(Sampler& sampler, const float* logits, size_t vocab,
                                       const std::unordered_set<int32_t>& stop_ids, float* logprob) {
  const TokenGrammar::StateId at = grammar_->Begin(state_);
  auto allows = [&](int32_t token) {
    if (stop_ids.count(token)) return state_.accepting();
    if (grammar_->has_mask(at)) return MaskHas(grammar_->Mask(at), token);
    const std::string& bytes = grammar_->trie().bytes(token);
    return !bytes.empty() && grammar_->Walk(at, bytes) != TokenGrammar::kDead;
  };
  int32_t pick = -1;
  if (sampler.untruncated()) {
    const int32_t free = sampler.Next(logits, vocab, nullptr);
    if (allows(free)) pick = free;
  }
  if (pick < 0) {
    const TokenMask& mask = grammar_->Mask(at);
    constexpr float kRefused = -std::numeric_limits<float>::infinity();
    const size_t known = std::min(vocab, grammar_->trie().vocab_size());
    masked_.assign(vocab, kRefused);
    size_t allowed = 0;
    for (size_t i = 0; i < known; ++i) {
      if (MaskHas(mask, static_cast<int32_t>(i))) {
        masked_[i] = logits[i];
        ++allowed;
      }
    }
    // The stop tokens: only where the output is whole.
    const bool whole = state_.accepting();
    for (int32_t id : stop_ids) {
      if (id < 0 || static_cast<size_t>(id) >= vocab) continue;
      if (static_cast<size_t>(id) < known && MaskHas(mask, id)) --allowed;
      masked_[id] = whole ? logits[id] : kRefused;
      allowed += whole;
    }
    if (allowed == 0) return Status(Code::kInferenceError, "no token of the vocabulary continues the output in its format");
    pick = sampler.Next(masked_.data(), vocab, nullptr);
  }
  if (logprob) *logprob = TokenLogProb(logits, vocab, pick, *std::max_element(logits, logits + vocab));
  return pick;
}

void OutputConstraint::Accept(int32_t token, const std::unordered_set<int32_t>& stop_ids) {
  if (stop_ids.count(token)) return;  // the sequence ends
  const TokenGrammar::StateId to = grammar_->Walk(grammar_->Begin(state_), grammar_->trie().bytes(token));
  if (to != TokenGrammar::kDead) state_ = grammar_->state(to);
}

}  // namespace shoal::structured
