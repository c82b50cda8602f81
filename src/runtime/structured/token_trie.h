// TokenTrie: a vocabulary's tokens by the bytes they stand for, as a trie
// laid out in depth-first order — each node knows where its subtree ends —
// so that finding every token a grammar state allows is one pass over an
// array that skips a whole subtree the moment its prefix is refused
// (token_grammar.h). Tokens that stand for no bytes (special tokens) are
// not in it.
//
// Threading: immutable once built; shared.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace shoal::structured {

class TokenTrie {
 public:
  struct Node {
    uint32_t depth = 0;    // bytes from the root (the root itself is not a node)
    uint32_t end = 0;      // the index after this node's subtree
    uint32_t tokens_begin = 0, tokens_end = 0;  // the tokens spelled by exactly this prefix
    uint8_t byte = 0;
  };

  // `bytes[id]`: what token `id` stands for.
  explicit TokenTrie(std::vector<std::string> bytes);

  const std::vector<Node>& nodes() const { return nodes_; }
  std::span<const int32_t> tokens(const Node& n) const {
    return std::span<const int32_t>(ids_).subspan(n.tokens_begin, n.tokens_end - n.tokens_begin);
  }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  size_t vocab_size() const { return bytes_.size(); }
  uint32_t max_depth() const { return max_depth_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<Node> nodes_;
  std::vector<int32_t> ids_;  // token ids ordered by their bytes
  uint32_t max_depth_ = 0;
};

}  // namespace shoal::structured
