// Vocab construction (load time only).
// Threading: not thread-safe while building; see the header.
#include "runtime/native/tokenizers/vocab.h"

namespace shoal::native::tok {

void Vocab::Reserve(size_t tokens, size_t bytes) {
  entries_.reserve(tokens);
  bytes_.reserve(bytes);
  size_t want = 16;
  while (want < tokens * 2) want <<= 1;
  if (want > table_.size()) {
    table_.assign(want, Slot{});
    mask_ = want - 1;
    table_count_ = 0;
    // Re-insert what is already there (Reserve after Add).
    for (uint32_t i = 0; i < entries_.size(); ++i) {
      uint64_t h = HashBytes(Text(i));
      size_t slot = h & mask_;
      while (table_[slot].entry != 0) {
        if (Text(table_[slot].entry - 1) == Text(i)) break;
        slot = (slot + 1) & mask_;
      }
      if (table_[slot].entry == 0) ++table_count_;
      table_[slot] = {i + 1, static_cast<uint32_t>(h >> 32)};
    }
  }
}

void Vocab::Grow() { Reserve(entries_.size() * 2 + 16, bytes_.size()); }

void Vocab::Add(std::string_view token, int32_t id) {
  if (id < 0) return;
  if ((table_count_ + 1) * 2 > table_.size()) Grow();
  auto index = static_cast<uint32_t>(entries_.size());
  entries_.push_back(
      {static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(token.size()), id});
  bytes_.append(token);

  uint64_t h = HashBytes(token);
  auto tag = static_cast<uint32_t>(h >> 32);
  size_t slot = h & mask_;
  while (table_[slot].entry != 0) {
    const Slot& s = table_[slot];
    if (s.tag == tag && Text(s.entry - 1) == token) break;  // same string: replace
    slot = (slot + 1) & mask_;
  }
  if (table_[slot].entry == 0) ++table_count_;
  table_[slot] = {index + 1, tag};

  if (static_cast<size_t>(id) >= by_id_.size()) by_id_.resize(static_cast<size_t>(id) + 1, -1);
  by_id_[id] = static_cast<int32_t>(index);
}

}  // namespace shoal::native::tok
