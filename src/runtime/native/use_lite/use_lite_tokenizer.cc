// The USE-Lite tokenizer (see use_lite_tokenizer.h). "§1.n" below is step n of
// /work/shared/notes/use-lite-forward.md §1, which was checked against the JS
// reference on 5,015 fuzz strings; keep the quirks, they change ids.
#include "runtime/native/use_lite/use_lite_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "common/file.h"
#include "runtime/native/tokenizers/unicode.h"

namespace shoal::native {
namespace {

constexpr char32_t kMarker = 0x2581;  // ▁, SentencePiece's word marker
constexpr char32_t kReplacement = 0xFFFD;

Status VocabError(std::string message) {
  return Status(Code::kModelLoadFailed, "use-lite vocab: " + std::move(message));
}

// UTF-8 → code points. A bad sequence becomes one U+FFFD per maximal subpart
// (the WHATWG / TextDecoder rule), so any byte string has a defined result.
std::u32string DecodeUtf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    int need;
    char32_t cp;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      need = 1, cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      need = 2, cp = b0 & 0x0F;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      need = 3, cp = b0 & 0x07;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    } else {
      out.push_back(kReplacement);
      ++i;
      continue;
    }
    size_t j = i + 1;
    bool ok = true;
    for (int k = 0; k < need; ++k, ++j) {
      if (j >= s.size()) {
        ok = false;
        break;
      }
      auto b = static_cast<unsigned char>(s[j]);
      unsigned char l = k == 0 ? lo : 0x80, h = k == 0 ? hi : 0xBF;
      if (b < l || b > h) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (b & 0x3F);
    }
    out.push_back(ok ? cp : kReplacement);
    i = j;  // on failure: resume at the byte that broke the sequence
  }
  return out;
}

// §1.1: NFKC, as JS `normalize("NFKC")` (Node 20's ICU is Unicode 15, as is
// utf8proc 2.8). Returns code points; the input is valid UTF-8 by now.
std::u32string Nfkc(const std::string& utf8) {
  utf8proc_uint8_t* mapped = nullptr;
  utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
      static_cast<utf8proc_ssize_t>(utf8.size()), &mapped,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  if (n < 0) {
    // Only out-of-memory is possible for valid UTF-8; fall back to no
    // normalization rather than losing the text.
    std::free(mapped);
    return DecodeUtf8(utf8);
  }
  std::u32string out = DecodeUtf8(std::string_view(reinterpret_cast<const char*>(mapped), n));
  std::free(mapped);
  return out;
}

size_t Utf16Length(const std::u32string& cps) {
  size_t n = 0;
  for (char32_t c : cps) n += c >= 0x10000 ? 2 : 1;
  return n;
}

}  // namespace

Result<std::unique_ptr<UseLiteTokenizer>> UseLiteTokenizer::Load(
    const std::string& vocab_json_path) {
  auto text = ReadFile(vocab_json_path);
  if (!text.ok()) return VocabError(text.status().message());
  return Parse(*text);
}

Result<std::unique_ptr<UseLiteTokenizer>> UseLiteTokenizer::Parse(std::string_view vocab_json) {
  std::unique_ptr<UseLiteTokenizer> t(new UseLiteTokenizer());
  try {
    nlohmann::json doc = nlohmann::json::parse(vocab_json);
    if (!doc.is_array() || doc.empty())
      return VocabError("expected a non-empty array of [piece, score]");
    t->pieces_.reserve(doc.size());
    t->utf16_length_.reserve(doc.size());
    for (size_t id = 0; id < doc.size(); ++id) {
      const nlohmann::json& e = doc[id];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string())
        return VocabError(fmt::format("entry {} is not a [piece, score] pair", id));
      // §1.4: vocab.json is partly corrupted around ':' (null scores); JS adds
      // `null + x = x`, so null is a score of 0. Scores stay doubles, as in JS.
      double score = 0;
      if (e[1].is_number()) {
        score = e[1].get<double>();
      } else if (!e[1].is_null()) {
        return VocabError(fmt::format("entry {}: score is neither a number nor null", id));
      }
      std::string piece = e[0].get<std::string>();
      std::u32string cps = DecodeUtf8(piece);
      t->utf16_length_.push_back(static_cast<uint32_t>(Utf16Length(cps)));
      // §1.4: ids 0..5 are never matched. A piece that occurs twice (`”5`:
      // 230, 238, 4464) keeps the last id and score, as the JS trie does.
      if (static_cast<int32_t>(id) >= kReservedIds && !cps.empty()) {
        t->Insert(cps, static_cast<int32_t>(id), score);
      }
      t->pieces_.push_back(std::move(piece));
    }
  } catch (const nlohmann::json::exception& e) {
    return VocabError(e.what());
  }
  return t;
}

void UseLiteTokenizer::Insert(const std::u32string& piece, int32_t id, double score) {
  int32_t node = 0;
  for (char32_t c : piece) {
    uint64_t key = (static_cast<uint64_t>(node) << 21) | c;
    auto [it, inserted] = children_.try_emplace(key, static_cast<int32_t>(nodes_.size()));
    if (inserted) nodes_.emplace_back();
    node = it->second;
  }
  nodes_[node].id = id;
  nodes_[node].score = score;
}

int32_t UseLiteTokenizer::Child(int32_t node, char32_t c) const {
  auto it = children_.find((static_cast<uint64_t>(node) << 21) | c);
  return it == children_.end() ? -1 : it->second;
}

void UseLiteTokenizer::Arcs(const std::u32string& cps, size_t start, std::vector<Arc>& out) const {
  size_t before = out.size();
  int32_t node = 0;
  for (size_t i = start; i < cps.size(); ++i) {
    node = Child(node, cps[i]);
    if (node < 0) break;
    if (nodes_[node].id >= 0)
      out.push_back({static_cast<uint32_t>(i + 1 - start), nodes_[node].id, nodes_[node].score});
  }
  // §1.5: the unknown arc (id 0, score 0) exists only where no piece starts;
  // JS commonPrefixSearch adds it when its match list is empty.
  if (out.size() == before) out.push_back({1, kUnknownId, 0.0});
}

std::vector<int32_t> UseLiteTokenizer::Encode(std::string_view text) const {
  // §1.1–1.3: NFKC; empty → zero tokens; else "▁" + text with every U+0020
  // replaced by ▁ (no lowercasing, trimming or collapsing); then code points.
  std::u32string decoded = DecodeUtf8(text);
  std::string valid;
  valid.reserve(text.size());
  for (char32_t c : decoded) tok::AppendUtf8(valid, c);
  std::u32string norm = Nfkc(valid);
  if (norm.empty()) return {};
  std::u32string cps;
  cps.reserve(norm.size() + 1);
  cps.push_back(kMarker);
  for (char32_t c : norm) cps.push_back(c == U' ' ? kMarker : c);
  const size_t n = cps.size();

  // §1.5: all arcs, grouped by start (each group shortest first).
  std::vector<Arc> arcs;
  std::vector<uint32_t> first(n + 1);
  for (size_t s = 0; s < n; ++s) {
    first[s] = static_cast<uint32_t>(arcs.size());
    Arcs(cps, s, arcs);
  }
  first[n] = static_cast<uint32_t>(arcs.size());

  // §1.6, the exact JS rule: for each end e ascending, candidates by start
  // ascending; accept if best[e] == 0.0 exactly OR v >= best[e]. So ties go to
  // the later start and a best of exactly 0 is always replaced — NOT textbook
  // Viterbi (":" gives [30, 57], not [604]). Arcs of start s reach e in
  // increasing length, so a cursor per start finds the one ending at e.
  std::vector<double> best(n + 1, 0.0);
  std::vector<int32_t> id(n + 1, kUnknownId);  // JS initialises words[] to 0
  std::vector<uint32_t> cursor(first.begin(), first.end() - 1);
  size_t longest = 1;
  for (const Arc& a : arcs) longest = std::max<size_t>(longest, a.length);
  for (size_t e = 1; e <= n; ++e) {
    for (size_t s = e > longest ? e - longest : 0; s < e; ++s) {
      uint32_t c = cursor[s];
      if (c == first[s + 1] || arcs[c].length != e - s) continue;
      ++cursor[s];
      double v = arcs[c].score + best[s];
      if (best[e] == 0.0 || v >= best[e]) {
        best[e] = v;
        id[e] = arcs[c].id;
      }
    }
  }

  // §1.7: backtrack from the end, stepping back by the JS string length
  // (UTF-16 units) of the chosen piece. Every piece of this vocab is BMP and
  // `�` (id 0) has length 1, so that is the arc's code-point length; an end
  // no arc reached keeps id 0 and steps back 1, as in JS.
  std::vector<int32_t> reversed;
  for (ptrdiff_t e = static_cast<ptrdiff_t>(n); e > 0;) {
    reversed.push_back(id[e]);
    // (max 1: an empty piece 0 would loop forever in JS; never with this vocab.)
    e -= std::max<ptrdiff_t>(1, utf16_length_[id[e]]);
  }

  // §1.8: a run of adjacent unknowns becomes one 0.
  std::vector<int32_t> ids;
  ids.reserve(reversed.size());
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) {
    if (*it == kUnknownId && !ids.empty() && ids.back() == kUnknownId) continue;
    ids.push_back(*it);
  }
  return ids;
}

std::string_view UseLiteTokenizer::Piece(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return {};
  return pieces_[id];
}

size_t UseLiteTokenizer::memory_bytes() const {
  size_t bytes = nodes_.capacity() * sizeof(Node) + utf16_length_.capacity() * sizeof(uint32_t) +
                 children_.size() * (sizeof(uint64_t) + sizeof(int32_t) + 2 * sizeof(void*)) +
                 children_.bucket_count() * sizeof(void*);
  for (const std::string& p : pieces_) bytes += sizeof(std::string) + p.capacity();
  return bytes;
}

}  // namespace shoal::native
