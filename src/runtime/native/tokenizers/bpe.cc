// BPE: byte-pair encoding over a word's characters (or bytes, for byte-level
// vocabularies), merging the adjacent pair with the lowest merge rank first,
// leftmost on ties — the order of the Rust `tokenizers` crate.
//
// Speed: merges live in a flat (left id, right id) → (rank, merged id) hash
// table, so a merge step is one probe. Short words (almost all of them) merge
// with a linear scan over a small array, long ones through a heap. Byte-level
// vocabularies are not applied to the text: each raw byte maps straight to the
// id of its one-character token (byte_ids_) — or, with a prefix or suffix
// (CLIP's "</w>"), to that of the affixed character.
//
// Supported fields: vocab, merges ("a b" strings or [a, b] arrays), unk_token,
// fuse_unk, byte_fallback (<0xXX> tokens), ignore_merges (Llama-3),
// continuing_subword_prefix, end_of_word_suffix. `dropout` is ignored:
// inference encodes deterministically.
//
// Threading: immutable after ParseBpe; per-call scratch is thread_local.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "runtime/native/tokenizers/byte_level.h"
#include "runtime/native/tokenizers/model.h"
#include "runtime/native/tokenizers/vocab.h"
#include "runtime/native/tokenizers/word_cache.h"

namespace shoal::native::tok {
namespace {

// (left id, right id) → (rank, merged id), open addressing.
class PairMap {
 public:
  void Reserve(size_t n) {
    size_t cap = 16;
    bits_ = 4;
    while (cap < n * 2) {
      cap <<= 1;
      ++bits_;
    }
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
  }

  // Keeps the first (lowest-rank) entry of a pair listed twice.
  void Insert(int32_t a, int32_t b, uint32_t rank, int32_t merged) {
    if ((count_ + 1) * 2 > slots_.size()) Rehash();
    uint64_t key = Key(a, b);
    for (size_t s = Slot0(key);; s = (s + 1) & mask_) {
      if (slots_[s].key == kEmpty) {
        slots_[s] = {key, rank, merged};
        ++count_;
        return;
      }
      if (slots_[s].key == key) return;
    }
  }

  bool Find(int32_t a, int32_t b, uint32_t* rank, int32_t* merged) const {
    uint64_t key = Key(a, b);
    for (size_t s = Slot0(key);; s = (s + 1) & mask_) {
      const Slot& sl = slots_[s];
      if (sl.key == key) {
        *rank = sl.rank;
        *merged = sl.merged;
        return true;
      }
      if (sl.key == kEmpty) return false;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t merged = 0;
  };
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t Slot0(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - bits_));
  }
  void Rehash() {
    std::vector<Slot> old = std::move(slots_);
    Reserve(std::max<size_t>(count_ * 2, 16));
    count_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmpty) {
        Insert(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xFFFFFFFFu), s.rank,
               s.merged);
      }
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  unsigned bits_ = 4;
  size_t count_ = 0;
};

struct Symbol {
  int32_t id;
  uint32_t start;
  uint32_t end;
};

constexpr uint32_t kNoRank = UINT32_MAX;
// Words up to this many symbols merge by linear scan; longer ones use a heap.
constexpr size_t kLinearMax = 48;

class BpeModel final : public Model {
 public:
  void Tokenize(std::string_view piece, std::vector<ModelToken>& out) const override {
    // Short words go through the per-thread cache; the rest are merged.
    if (!WordCache::Cacheable(piece)) {
      TokenizeUncached(piece, out);
      return;
    }
    WordCache& cache = WordCache::Instance();
    const uint64_t hash = HashBytes(piece);
    if (cache.Get(owner_, hash, piece, out)) return;
    const size_t first = out.size();
    TokenizeUncached(piece, out);
    cache.Put(owner_, hash, piece, out.data() + first, out.size() - first);
  }

  std::optional<int32_t> TokenToId(std::string_view token) const override {
    return vocab_.Find(token);
  }
  std::string_view IdToToken(int32_t id) const override { return vocab_.Token(id); }
  std::string_view continuing_subword_prefix() const override { return prefix_; }
  std::optional<int32_t> unk_id() const override { return unk_id_; }
  size_t id_space() const override { return vocab_.id_space(); }

  Status Load(Json json, bool byte_level);

 private:
  void TokenizeUncached(std::string_view piece, std::vector<ModelToken>& out) const {
    if (ignore_merges_) {
      if (auto id = FindWhole(piece)) {
        out.push_back({*id, 0, static_cast<uint32_t>(piece.size())});
        return;
      }
    }
    thread_local std::vector<Symbol> tls_syms;
    std::vector<Symbol>& syms = tls_syms;
    syms.clear();
    InitialSymbols(piece, syms);
    if (syms.size() > 1) {
      if (syms.size() <= kLinearMax) {
        MergeLinear(syms);
      } else {
        MergeHeap(syms);
      }
    }
    for (const Symbol& s : syms) out.push_back({s.id, s.start, s.end});
  }

  std::optional<int32_t> FindWhole(std::string_view piece) const {
    if (!byte_level_) return vocab_.Find(piece);
    thread_local std::string spelled;
    spelled.clear();
    BytesToByteLevel(piece, spelled);
    return vocab_.Find(spelled);
  }

  void PushUnknown(uint32_t start, uint32_t end, bool* prev_unk, std::vector<Symbol>& syms) const {
    if (!unk_id_) return;  // no unk token: the character is dropped, as in the Rust crate
    if (fuse_unk_ && *prev_unk) {
      syms.back().end = end;
    } else {
      syms.push_back({*unk_id_, start, end});
    }
    *prev_unk = true;
  }

  void InitialSymbols(std::string_view piece, std::vector<Symbol>& syms) const {
    bool prev_unk = false;
    const auto n = static_cast<uint32_t>(piece.size());
    const bool affixes = !prefix_.empty() || !suffix_.empty();
    thread_local std::string key;
    if (byte_level_) {
      for (uint32_t i = 0; i < n; ++i) {
        int32_t id = byte_ids_[static_cast<unsigned char>(piece[i])];
        if (affixes) {  // CLIP: the word's last byte carries end_of_word_suffix
          key.clear();
          if (i > 0) key += prefix_;
          AppendUtf8(key, kByteLevelTable.cp[static_cast<unsigned char>(piece[i])]);
          if (i + 1 == n) key += suffix_;
          id = vocab_.Find(key).value_or(-1);
        }
        if (id >= 0) {
          syms.push_back({id, i, i + 1});
          prev_unk = false;
        } else {
          PushUnknown(i, i + 1, &prev_unk, syms);
        }
      }
      return;
    }
    for (uint32_t i = 0; i < n;) {
      const auto len = static_cast<uint32_t>(Utf8Length(static_cast<unsigned char>(piece[i])));
      const uint32_t j = std::min(i + len, n);
      std::optional<int32_t> id;
      if (!affixes && len <= 3 && !bmp_ids_.empty()) {
        // One table read instead of a hash lookup for every BMP character.
        int l;
        int32_t a = bmp_ids_[DecodeUtf8(piece, i, &l) & 0xFFFF];
        if (a >= 0) id = a;
      } else if (!affixes) {
        id = vocab_.Find(piece.substr(i, j - i));
      } else {
        key.clear();
        if (i > 0) key += prefix_;
        key.append(piece.substr(i, j - i));
        if (j == n) key += suffix_;
        id = vocab_.Find(key);
      }
      if (id) {
        syms.push_back({*id, i, j});
        prev_unk = false;
      } else if (byte_fallback_ && HasFallback(piece.substr(i, j - i))) {
        for (uint32_t k = i; k < j; ++k) {
          syms.push_back({fallback_ids_[static_cast<unsigned char>(piece[k])], k, k + 1});
        }
        prev_unk = false;
      } else {
        PushUnknown(i, j, &prev_unk, syms);
      }
      i = j;
    }
  }

  bool HasFallback(std::string_view ch) const {
    for (unsigned char b : ch) {
      if (fallback_ids_[b] < 0) return false;
    }
    return true;
  }

  struct PairRank {
    uint32_t rank;
    int32_t merged;
  };

  PairRank Rank(int32_t a, int32_t b) const {
    PairRank r{kNoRank, -1};
    merges_.Find(a, b, &r.rank, &r.merged);
    return r;
  }

  void MergeLinear(std::vector<Symbol>& syms) const {
    thread_local std::vector<PairRank> ranks;
    ranks.resize(syms.size() - 1);
    for (size_t k = 0; k + 1 < syms.size(); ++k) ranks[k] = Rank(syms[k].id, syms[k + 1].id);
    while (!ranks.empty()) {
      size_t best = 0;
      for (size_t k = 1; k < ranks.size(); ++k) {
        if (ranks[k].rank < ranks[best].rank) best = k;
      }
      if (ranks[best].rank == kNoRank) break;
      syms[best].id = ranks[best].merged;
      syms[best].end = syms[best + 1].end;
      syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(best) + 1);
      ranks.erase(ranks.begin() + static_cast<std::ptrdiff_t>(best));
      if (best < ranks.size()) ranks[best] = Rank(syms[best].id, syms[best + 1].id);
      if (best > 0) ranks[best - 1] = Rank(syms[best - 1].id, syms[best].id);
    }
  }

  void MergeHeap(std::vector<Symbol>& syms) const {
    struct Node {
      int32_t id;
      uint32_t start, end;
      int32_t prev, next;
      bool alive;
    };
    struct Cand {
      uint32_t rank;
      uint32_t left;
      int32_t left_id, right_id, merged;
      bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
    };
    const auto n = static_cast<int32_t>(syms.size());
    thread_local std::vector<Node> tls_nodes;
    thread_local std::vector<Cand> tls_heap;
    std::vector<Node>& nodes = tls_nodes;
    nodes.resize(static_cast<size_t>(n));
    for (int32_t k = 0; k < n; ++k) {
      nodes[k] = {syms[k].id, syms[k].start, syms[k].end, k - 1, k + 1 < n ? k + 1 : -1, true};
    }
    // A binary min-heap on (rank, position) in a reused buffer.
    std::vector<Cand>& heap = tls_heap;
    heap.clear();
    auto push = [&](int32_t left) {
      const Node& l = nodes[left];
      if (l.next < 0) return;
      const Node& r = nodes[l.next];
      PairRank pr = Rank(l.id, r.id);
      if (pr.rank != kNoRank) {
        heap.push_back({pr.rank, static_cast<uint32_t>(left), l.id, r.id, pr.merged});
        std::push_heap(heap.begin(), heap.end(), std::greater<Cand>());
      }
    };
    for (int32_t k = 0; k + 1 < n; ++k) push(k);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<Cand>());
      Cand c = heap.back();
      heap.pop_back();
      Node& l = nodes[c.left];
      // Stale when either side has merged since the candidate was pushed.
      if (!l.alive || l.next < 0 || l.id != c.left_id) continue;
      Node& r = nodes[l.next];
      if (r.id != c.right_id) continue;
      l.id = c.merged;
      l.end = r.end;
      r.alive = false;
      l.next = r.next;
      if (r.next >= 0) nodes[r.next].prev = static_cast<int32_t>(c.left);
      if (l.prev >= 0) push(l.prev);
      push(static_cast<int32_t>(c.left));
    }
    syms.clear();
    for (int32_t k = 0; k >= 0; k = nodes[k].next) {
      syms.push_back({nodes[k].id, nodes[k].start, nodes[k].end});
    }
  }

  Vocab vocab_;
  PairMap merges_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool byte_level_ = false;
  std::string prefix_;            // continuing_subword_prefix
  std::string suffix_;            // end_of_word_suffix
  int32_t byte_ids_[256];         // byte-level: id of each byte's one-character token
  int32_t fallback_ids_[256];     // byte_fallback: id of "<0xXX>"
  std::vector<int32_t> bmp_ids_;  // id of each BMP character's one-character token, or -1
  uint64_t owner_ = WordCache::NewOwnerId();  // this model's entries in the WordCache
};

// Splits an old-style "a b" merge at its first space.
bool SplitMerge(std::string_view m, std::string_view* a, std::string_view* b) {
  size_t sp = m.find(' ');
  if (sp == std::string_view::npos || sp == 0) return false;
  *a = m.substr(0, sp);
  *b = m.substr(sp + 1);
  return !b->empty();
}

Status BpeModel::Load(Json json, bool byte_level) {
  byte_level_ = byte_level;
  if (auto read = ReadVocabObject(json, &vocab_); !read.ok()) return read.status();

  SHOAL_ASSIGN_OR_RETURN(auto prefix, OptString(json, "continuing_subword_prefix", "model"));
  SHOAL_ASSIGN_OR_RETURN(auto suffix, OptString(json, "end_of_word_suffix", "model"));
  if (prefix) prefix_ = std::string(*prefix);
  if (suffix) suffix_ = std::string(*suffix);

  simdjson::dom::array merges;
  bool has_merges = false;
  if (auto m = OptField(json, "merges")) {
    if (m->get_array().get(merges) != simdjson::SUCCESS) {
      return LoadError("model.merges", "expected an array");
    }
    has_merges = true;
  }
  merges_.Reserve(has_merges ? merges.size() : 0);
  uint32_t rank = 0;
  std::string merged;
  if (has_merges) {
    for (Json m : merges) {
      std::string_view a, b;
      simdjson::dom::array pair;
      std::string_view line;
      if (m.get_string().get(line) == simdjson::SUCCESS) {
        if (!SplitMerge(line, &a, &b)) {
          return LoadError(Index("model.merges", rank), "expected \"left right\"");
        }
      } else if (m.get_array().get(pair) == simdjson::SUCCESS && pair.size() == 2 &&
                 pair.at(0).get_string().get(a) == simdjson::SUCCESS &&
                 pair.at(1).get_string().get(b) == simdjson::SUCCESS) {
      } else {
        return LoadError(Index("model.merges", rank),
                         "expected \"left right\" or [\"left\", \"right\"]");
      }
      auto ida = vocab_.Find(a);
      auto idb = vocab_.Find(b);
      merged.assign(a);
      std::string_view tail = b;
      if (!prefix_.empty() && tail.substr(0, prefix_.size()) == prefix_) {
        tail.remove_prefix(prefix_.size());
      }
      merged.append(tail);
      auto idm = vocab_.Find(merged);
      if (!ida || !idb || !idm) {
        return LoadError(Index("model.merges", rank),
                         "merge \"" + std::string(a) + "\" + \"" + std::string(b) +
                             "\" uses a token that is not in the vocabulary");
      }
      merges_.Insert(*ida, *idb, rank, *idm);
      ++rank;
    }
  }

  SHOAL_ASSIGN_OR_RETURN(auto unk, OptString(json, "unk_token", "model"));
  if (unk) unk_id_ = vocab_.Find(*unk);
  SHOAL_ASSIGN_OR_RETURN(fuse_unk_, OptBool(json, "fuse_unk", false, "model"));
  SHOAL_ASSIGN_OR_RETURN(byte_fallback_, OptBool(json, "byte_fallback", false, "model"));
  SHOAL_ASSIGN_OR_RETURN(ignore_merges_, OptBool(json, "ignore_merges", false, "model"));

  char name[8];
  std::string spelled;
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    fallback_ids_[b] = vocab_.Find(name).value_or(-1);
    spelled.clear();
    AppendUtf8(spelled, kByteLevelTable.cp[b]);
    byte_ids_[b] = vocab_.Find(spelled).value_or(-1);
  }
  if (!byte_level_ && prefix_.empty() && suffix_.empty()) {
    bmp_ids_.assign(0x10000, -1);
    std::string ch;
    for (uint32_t cp = 0; cp < 0x10000; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;  // surrogates never occur in UTF-8
      ch.clear();
      AppendUtf8(ch, cp);
      bmp_ids_[cp] = vocab_.Find(ch).value_or(-1);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Model>> ParseBpe(Json json, bool byte_level) {
  auto model = std::make_unique<BpeModel>();
  SHOAL_RETURN_IF_ERROR(model->Load(json, byte_level));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace shoal::native::tok
