#include "runtime/structured/grammar_state.h"

#include <algorithm>

namespace shoal::structured {

using Kind = GrammarElement::Kind;

void GrammarState::Expand(Stack stack) {
  const std::vector<GrammarElement>& elements = grammar_->elements;
  while (!stack.empty()) {
    const GrammarElement& e = elements[stack.back()];
    if (e.kind == Kind::kByte) break;
    if (e.kind == Kind::kEnd) {  // this alternative is done: back to the rule that entered it
      stack.pop_back();
      continue;
    }
    // A rule: continue after it once it is matched (unless nothing follows
    // it in its alternative), and enter each of its alternatives.
    ++stack.back();
    if (elements[stack.back()].kind == Kind::kEnd) stack.pop_back();
    for (uint32_t alt : grammar_->alternatives[e.rule]) {
      Stack entered = stack;
      entered.push_back(alt);
      Expand(std::move(entered));
    }
    return;
  }
  stacks_.push_back(std::move(stack));
}

GrammarState GrammarState::Start(const Grammar& grammar) {
  GrammarState s;
  s.grammar_ = &grammar;
  for (uint32_t alt : grammar.alternatives[grammar.root]) s.Expand(Stack{alt});
  std::sort(s.stacks_.begin(), s.stacks_.end());
  s.stacks_.erase(std::unique(s.stacks_.begin(), s.stacks_.end()), s.stacks_.end());
  return s;
}

GrammarState GrammarState::Advance(uint8_t byte) const {
  GrammarState next;
  next.grammar_ = grammar_;
  for (const Stack& stack : stacks_) {
    if (stack.empty()) continue;
    const GrammarElement& e = grammar_->elements[stack.back()];
    if (byte < e.lo || byte > e.hi) continue;
    Stack moved = stack;
    ++moved.back();
    next.Expand(std::move(moved));
  }
  if (next.stacks_.size() > 1) {
    std::sort(next.stacks_.begin(), next.stacks_.end());
    next.stacks_.erase(std::unique(next.stacks_.begin(), next.stacks_.end()), next.stacks_.end());
  }
  return next;
}

bool GrammarState::AdvanceAll(std::string_view bytes, GrammarState* out) const {
  *out = *this;
  for (char c : bytes) {
    *out = out->Advance(static_cast<uint8_t>(c));
    if (out->dead()) return false;
  }
  return true;
}

bool GrammarState::accepting() const {
  return !stacks_.empty() && stacks_.front().empty();  // sorted: an empty stack comes first
}

bool GrammarState::can_continue() const { return !stacks_.empty() && !stacks_.back().empty(); }

std::string GrammarState::Key() const {
  std::string key;
  for (const Stack& s : stacks_) {
    key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(uint32_t));
    key.append(4, '\xff');  // no position is 0xffffffff
  }
  return key;
}

}  // namespace shoal::structured
