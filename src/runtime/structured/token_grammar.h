// TokenGrammar: a Grammar (grammar.h) over one model's vocabulary — which
// tokens may come next in a given grammar state.
//
// The grammar states met are numbered as they are met, and each number
// remembers where every byte leads (a lazily built DFA over the pushdown
// automaton's states — a state is its whole stack set, so the step is
// deterministic). The states a format's outputs pass through repeat (inside
// any string the state is the same after every ordinary character), so
// after the first steps a byte costs one table lookup, and checking a token
// one lookup per byte.
//
// The tokens allowed in a state are a mask (a bit per token id), found by
// walking the vocabulary's trie (token_trie.h) once — each node a lookup in
// those tables, a refused prefix skipping its whole subtree — and kept per
// state: vocab/8 bytes each (19 KB for a 152k vocabulary), at most
// kMaxMasks; past kMaxStates states the tables start over at the next
// Begin.
//
// Threading: not thread-safe; one per generation engine (grammar_cache.h),
// used from its thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/structured/grammar.h"
#include "runtime/structured/grammar_state.h"
#include "runtime/structured/token_trie.h"

namespace shoal::structured {

using TokenMask = std::vector<uint64_t>;

inline bool MaskHas(const TokenMask& m, int32_t id) { return (m[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }

class TokenGrammar {
 public:
  using StateId = uint32_t;
  static constexpr StateId kDead = UINT32_MAX;
  static constexpr size_t kMaxStates = 4096;
  static constexpr size_t kMaxMasks = 256;

  TokenGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);

  GrammarState Start() const { return GrammarState::Start(*grammar_); }
  const TokenTrie& trie() const { return *trie_; }

  // The number of `state`; ids from before a Begin may not be used after it
  // (the tables may have started over).
  StateId Begin(const GrammarState& state);
  // Where `byte` (or every byte of `bytes`) leads; kDead where refused.
  StateId Step(StateId id, uint8_t byte);
  StateId Walk(StateId id, std::string_view bytes);
  const GrammarState& state(StateId id) const { return states_[id].state; }

  // The tokens that may follow state `id`, computed once.
  const TokenMask& Mask(StateId id);
  bool has_mask(StateId id) const { return states_[id].mask != nullptr; }

  size_t states() const { return states_.size(); }

 private:
  static constexpr StateId kUnknown = UINT32_MAX - 1;
  struct Known {
    GrammarState state;
    std::vector<StateId> next;  // by byte: kUnknown until stepped; empty until the first step
    std::unique_ptr<TokenMask> mask;
  };
  StateId Intern(GrammarState state);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<Known> states_;
  std::unordered_map<std::string, StateId> ids_;  // by GrammarState::Key
  size_t masks_ = 0;
  std::vector<StateId> walk_;  // scratch: the state at each trie depth
};

}  // namespace shoal::structured
