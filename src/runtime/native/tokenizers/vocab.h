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

#include "runtime/native/tokenizers/json_util.h"

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
    if (slots_.empty()) return std::nullopt;
    uint64_t h = HashBytes(token);
    auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return std::nullopt;
      if (s.tag == tag && Text(s.offset, s.length) == token) return s.id;
    }
  }

  // The token with this id; empty when none has it.
  std::string_view Token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= by_id_.size()) return {};
    return Text(by_id_[id].offset, by_id_[id].length);
  }

  size_t size() const { return count_; }
  // One past the largest id (the embedding rows a model needs).
  size_t id_space() const { return by_id_.size(); }

 private:
  // Where a string lies in bytes_ sits in the slot itself, so a lookup
  // touches the slot and the bytes: two cache lines, not three.
  struct Slot {
    uint32_t tag = 0;  // high hash bits, compared before the bytes
    uint32_t offset = 0;
    uint32_t length = 0;
    int32_t id = -1;  // -1: empty
  };
  struct Span {
    uint32_t offset = 0;
    uint32_t length = 0;
  };

  std::string_view Text(uint32_t offset, uint32_t length) const {
    return std::string_view(bytes_).substr(offset, length);
  }
  void Rehash(size_t slots);

  std::string bytes_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
  std::vector<Span> by_id_;  // id → its string; empty span when no token has the id
};

// Fills `vocab` from a model's "vocab": {"token": id, ...} (WordPiece, BPE);
// returns the longest token's byte length.
Result<size_t> ReadVocabObject(Json model, Vocab* vocab);

}  // namespace shoal::native::tok
