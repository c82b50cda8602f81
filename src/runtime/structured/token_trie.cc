#include "runtime/structured/token_trie.h"

#include <algorithm>

namespace shoal::structured {

TokenTrie::TokenTrie(std::vector<std::string> bytes) : bytes_(std::move(bytes)) {
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (!bytes_[id].empty()) ids_.push_back(static_cast<int32_t>(id));
  }
  std::sort(ids_.begin(), ids_.end(), [&](int32_t a, int32_t b) {
    return bytes_[a] != bytes_[b] ? bytes_[a] < bytes_[b] : a < b;
  });
  // Sorted, each token adds the nodes for its bytes past what it shares with
  // the one before; `open` holds the nodes of the current prefix.
  std::vector<uint32_t> open;
  const std::string* prev = nullptr;
  for (uint32_t k = 0; k < ids_.size(); ++k) {
    const std::string& b = bytes_[ids_[k]];
    size_t shared = 0;
    if (prev) {
      while (shared < std::min(prev->size(), b.size()) && (*prev)[shared] == b[shared]) ++shared;
    }
    while (open.size() > shared) {  // subtrees that end here
      nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
      open.pop_back();
    }
    for (size_t d = shared; d < b.size(); ++d) {
      Node n;
      n.depth = static_cast<uint32_t>(d + 1);
      n.byte = static_cast<uint8_t>(b[d]);
      n.tokens_begin = n.tokens_end = k;
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(n);
    }
    Node& last = nodes_[open.back()];
    if (last.tokens_end == last.tokens_begin) last.tokens_begin = k;
    last.tokens_end = k + 1;
    max_depth_ = std::max<uint32_t>(max_depth_, static_cast<uint32_t>(b.size()));
    prev = &b;
  }
  for (uint32_t i : open) nodes_[i].end = static_cast<uint32_t>(nodes_.size());
}

}  // namespace shoal::structured
