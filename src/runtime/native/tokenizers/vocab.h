// Vocab: token string ↔ id, built once at load and read on every Encode.
//
// An open-addressing hash table over one contiguous byte buffer: a lookup is a
// hash, usually one probe and one memcmp, with no allocation — the BPE and
// WordPiece inner loops do several per word. std::unordered_map<std::string>
// would cost a node per token (262k for Gemma-3) and a pointer chase per probe.
//
// Threading: built single-threaded by the loader; afterwards read-only, so
// any number of threads may call Find / Token at once.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::native::tok {

inline uint64_t HashBytes(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  if (i < n) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

class Vocab {
 public:
  void Reserve(size_t tokens, size_t bytes);
  // Maps token → id (a later Add of the same string wins, as in a JSON
  // object read in order) and id → token.
  void Add(std::string_view token, int32_t id);

  std::optional<int32_t> Find(std::string_view token) const {
    if (table_.empty()) return std::nullopt;
    uint64_t h = HashBytes(token);
    auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t slot = h & mask_;; slot = (slot + 1) & mask_) {
      const Slot& s = table_[slot];
      if (s.entry == 0) return std::nullopt;
      if (s.tag == tag && Text(s.entry - 1) == token) return entries_[s.entry - 1].id;
    }
  }

  // The token with this id; empty when none has it.
  std::string_view Token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= by_id_.size() || by_id_[id] < 0) return {};
    return Text(static_cast<uint32_t>(by_id_[id]));
  }

  size_t size() const { return table_count_; }
  // One past the largest id (the embedding rows a model needs).
  size_t id_space() const { return by_id_.size(); }

 private:
  struct Entry {
    uint32_t offset;
    uint32_t length;
    int32_t id;
  };
  struct Slot {
    uint32_t entry = 0;  // index + 1 into entries_; 0 = empty
    uint32_t tag = 0;    // high hash bits, compared before the bytes
  };

  std::string_view Text(uint32_t entry) const {
    const Entry& e = entries_[entry];
    return std::string_view(bytes_).substr(e.offset, e.length);
  }
  void Grow();

  std::string bytes_;
  std::vector<Entry> entries_;
  std::vector<Slot> table_;
  size_t mask_ = 0;
  size_t table_count_ = 0;
  std::vector<int32_t> by_id_;  // id → entry index, -1 when no token has the id
};

}  // namespace shoal::native::tok
