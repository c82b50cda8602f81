// GrammarState: how far a match of a Grammar (grammar.h) has come — the set
// of ways the bytes so far can continue, each a stack of positions (the
// next element to match in each rule entered, innermost last), as a
// pushdown automaton runs a context-free grammar. Every stack's top is a
// byte element, or the stack is empty: the bytes so far are a whole
// sentence of the grammar.
//
// Starting a state and advancing it expand rule references until each
// stack's top is a byte again; a reference that is the last element of its
// alternative is replaced rather than stacked (a tail call), so the
// repetitions the grammars are made of (x ::= y x | ) run in constant
// depth. The grammar has no left recursion (gbnf.cc checks), so expanding
// ends.
//
// Threading: a value; not shared while being advanced. The grammar it
// points into outlives it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/structured/grammar.h"

namespace shoal::structured {

class GrammarState {
 public:
  GrammarState() = default;
  // Before any byte: the grammar's root, expanded.
  static GrammarState Start(const Grammar& grammar);

  // The state after one more byte; dead() when no sentence goes on so.
  GrammarState Advance(uint8_t byte) const;
  // After every byte of `bytes`; false (and *out dead) where one cannot follow.
  bool AdvanceAll(std::string_view bytes, GrammarState* out) const;

  bool dead() const { return stacks_.empty(); }
  // The bytes so far are a sentence of the grammar.
  bool accepting() const;
  // Some byte may still follow.
  bool can_continue() const;
  // Equal for equal states (the stacks, in order): a cache key.
  std::string Key() const;

 private:
  using Stack = std::vector<uint32_t>;
  void Expand(Stack stack);

  const Grammar* grammar_ = nullptr;
  std::vector<Stack> stacks_;  // sorted, no two equal
};

}  // namespace shoal::structured
