#include "runtime/structured/token_grammar.h"

namespace shoal::structured {

TokenGrammar::TokenGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)) {}

TokenGrammar::StateId TokenGrammar::Intern(GrammarState state) {
  if (state.dead()) return kDead;
  auto [it, added] = ids_.emplace(state.Key(), static_cast<StateId>(states_.size()));
  if (added) states_.push_back({std::move(state), {}, nullptr});
  return it->second;
}

TokenGrammar::StateId TokenGrammar::Begin(const GrammarState& state) {
  if (states_.size() >= kMaxStates) {
    states_.clear();
    ids_.clear();
    masks_ = 0;
  }
  if (masks_ >= kMaxMasks) {
    for (Known& k : states_) k.mask.reset();
    masks_ = 0;
  }
  return Intern(state);
}

TokenGrammar::StateId TokenGrammar::Step(StateId id, uint8_t byte) {
  std::vector<StateId>& next = states_[id].next;
  if (next.empty()) next.assign(256, kUnknown);
  if (next[byte] != kUnknown) return next[byte];
  const StateId to = Intern(states_[id].state.Advance(byte));  // may grow states_: `next` is not used after
  states_[id].next[byte] = to;
  return to;
}

TokenGrammar::StateId TokenGrammar::Walk(StateId id, std::string_view bytes) {
  for (char c : bytes) {
    if (id == kDead) break;
    id = Step(id, static_cast<uint8_t>(c));
  }
  return id;
}

const TokenMask& TokenGrammar::Mask(StateId id) {
  if (states_[id].mask) return *states_[id].mask;
  auto mask = std::make_unique<TokenMask>((trie_->vocab_size() + 63) / 64, 0);
  // Depth-first over the trie: a node's state is its parent's stepped by
  // its byte; a refused one skips its subtree.
  walk_.resize(trie_->max_depth() + 1);
  walk_[0] = id;
  const std::vector<TokenTrie::Node>& nodes = trie_->nodes();
  for (size_t i = 0; i < nodes.size();) {
    const TokenTrie::Node& n = nodes[i];
    const StateId next = Step(walk_[n.depth - 1], n.byte);
    if (next == kDead) {
      i = n.end;
      continue;
    }
    for (int32_t token : trie_->tokens(n)) (*mask)[static_cast<size_t>(token) >> 6] |= uint64_t{1} << (token & 63);
    walk_[n.depth] = next;
    ++i;
  }
  ++masks_;
  states_[id].mask = std::move(mask);
  return *states_[id].mask;
}

}  // namespace shoal::structured
