// WordCache: remembers the tokens of recently seen short words, so the BPE
// merge loop runs once per distinct word rather than once per occurrence
// (text repeats its words: " the", ",", " of" ...).
//
// Threading: one cache per thread (thread_local, see Instance()), shared by
// every model that thread runs, so lookups take no lock. Entries are tagged
// with the owning model's unique id (never reused, unlike an address), so a
// model loaded after another one was destroyed cannot read stale entries.
// Direct-mapped with a fixed number of slots: bounded memory (about 1 MiB per
// thread), no eviction bookkeeping; a colliding word simply replaces the slot.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "runtime/native/tokenizers/model.h"
#include "runtime/native/tokenizers/vocab.h"

namespace shoal::native::tok {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 40;  // longer words are rarely repeated
  static constexpr size_t kMaxTokens = 16;
  static constexpr size_t kSlots = 1 << 13;

  // A process-wide unique id for a model instance.
  static uint64_t NewOwnerId() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }

  static WordCache& Instance() {
    thread_local WordCache cache;
    return cache;
  }

  static bool Cacheable(std::string_view word) { return word.size() <= kMaxWordBytes; }

  // Appends the cached tokens of `word` and returns true on a hit.
  bool Get(uint64_t owner, uint64_t hash, std::string_view word,
           std::vector<ModelToken>& out) const {
    const Slot& s = slots_[hash & (kSlots - 1)];
    if (s.owner != owner || s.hash != hash || s.word_len != word.size() ||
        std::memcmp(s.word, word.data(), word.size()) != 0) {
      return false;
    }
    uint32_t start = 0;
    for (size_t k = 0; k < s.count; ++k) {
      out.push_back({s.ids[k], start, s.ends[k]});
      start = s.ends[k];
    }
    return true;
  }

  // Remembers `tokens` for `word` when they tile it left to right (always
  // true for BPE) and fit the slot.
  void Put(uint64_t owner, uint64_t hash, std::string_view word, const ModelToken* tokens,
           size_t count) {
    if (count > kMaxTokens || word.size() > kMaxWordBytes) return;
    uint32_t at = 0;
    for (size_t k = 0; k < count; ++k) {
      if (tokens[k].start != at) return;
      at = tokens[k].end;
    }
    if (at != word.size()) return;
    Slot& s = slots_[hash & (kSlots - 1)];
    s.owner = owner;
    s.hash = hash;
    s.word_len = static_cast<uint8_t>(word.size());
    s.count = static_cast<uint8_t>(count);
    std::memcpy(s.word, word.data(), word.size());
    for (size_t k = 0; k < count; ++k) {
      s.ids[k] = tokens[k].id;
      s.ends[k] = static_cast<uint8_t>(tokens[k].end);
    }
  }

 private:
  struct Slot {
    uint64_t owner = 0;  // 0: empty (ids start at 1)
    uint64_t hash = 0;
    uint8_t word_len = 0;
    uint8_t count = 0;
    uint8_t ends[kMaxTokens];
    char word[kMaxWordBytes];
    int32_t ids[kMaxTokens];
  };

  WordCache() : slots_(kSlots) {}

  std::vector<Slot> slots_;
};

}  // namespace shoal::native::tok
