// Added-token loading and matching.
// Threading: Load is load-time only; FindMatches reads immutable tries.
#include "runtime/native/tokenizers/added_tokens.h"

#include <map>

#include "runtime/native/tokenizers/normalizers.h"
#include "runtime/native/tokenizers/unicode.h"

namespace shoal::native::tok {

void AddedTokens::BuildTrie(const std::vector<std::pair<std::string, int32_t>>& words, Trie& trie) {
  // Build with maps, then flatten every node's edges into one sorted run so a
  // walk touches a few contiguous bytes per step.
  std::vector<std::map<uint8_t, uint32_t>> children(1);
  std::vector<int32_t> token(1, -1);
  for (const auto& [word, index] : words) {
    if (word.empty()) continue;
    uint32_t node = 0;
    for (unsigned char b : word) {
      auto it = children[node].find(b);
      if (it == children[node].end()) {
        auto child = static_cast<uint32_t>(children.size());
        children[node][b] = child;
        children.emplace_back();
        token.push_back(-1);
        node = child;
      } else {
        node = it->second;
      }
    }
    // Two tokens with the same content: the later one wins, as in a map.
    token[node] = index;
    trie.first_byte[static_cast<unsigned char>(word[0])] = true;
  }
  trie.nodes.assign(children.size(), Node{});
  trie.edges.clear();
  for (size_t n = 0; n < children.size(); ++n) {
    trie.nodes[n].token = token[n];
    trie.nodes[n].edges_begin = static_cast<uint32_t>(trie.edges.size());
    trie.nodes[n].edges_count = static_cast<uint32_t>(children[n].size());
    for (const auto& [b, child] : children[n]) trie.edges.emplace_back(b, child);
  }
}

Status AddedTokens::Load(Json array, const Normalizer* normalizer) {
  simdjson::dom::array arr;
  if (array.get_array().get(arr) != simdjson::SUCCESS) {
    return LoadError("added_tokens", "expected an array");
  }
  std::vector<std::pair<std::string, int32_t>> raw, normalized;
  size_t i = 0;
  for (Json item : arr) {
    std::string where = Index("added_tokens", i++);
    AddedToken t;
    SHOAL_ASSIGN_OR_RETURN(Json id_json, ReqField(item, "id", where));
    SHOAL_ASSIGN_OR_RETURN(t.id, ToId(id_json, Path(where, "id")));
    SHOAL_ASSIGN_OR_RETURN(std::string_view content, ReqString(item, "content", where));
    t.content = std::string(content);
    SHOAL_ASSIGN_OR_RETURN(t.special, OptBool(item, "special", false, where));
    SHOAL_ASSIGN_OR_RETURN(t.normalized, OptBool(item, "normalized", !t.special, where));
    SHOAL_ASSIGN_OR_RETURN(t.lstrip, OptBool(item, "lstrip", false, where));
    SHOAL_ASSIGN_OR_RETURN(t.rstrip, OptBool(item, "rstrip", false, where));
    SHOAL_ASSIGN_OR_RETURN(t.single_word, OptBool(item, "single_word", false, where));
    if (t.content.empty()) continue;
    by_content_.Add(t.content, t.id);
    const auto index = static_cast<int32_t>(tokens_.size());
    if (t.normalized && normalizer != nullptr) {
      NormalizedString s(t.content, 0);
      SHOAL_RETURN_IF_ERROR(normalizer->Normalize(s));
      normalized.emplace_back(s.text(), index);
    } else if (t.normalized) {
      normalized.emplace_back(t.content, index);
    } else {
      raw.emplace_back(t.content, index);
    }
    tokens_.push_back(std::move(t));
  }
  BuildTrie(raw, raw_);
  BuildTrie(normalized, normalized_);
  return Status::Ok();
}

namespace {

// The code point that ends at `end` (exclusive) in valid UTF-8.
uint32_t CodePointBefore(std::string_view text, size_t end, size_t* start) {
  size_t k = end - 1;
  while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
  *start = k;
  int len;
  return DecodeUtf8(text, k, &len);
}

}  // namespace

void AddedTokens::FindMatches(std::string_view text, bool normalized_set,
                              std::vector<AddedMatch>& out) const {
  const Trie& trie = normalized_set ? normalized_ : raw_;
  if (trie.nodes.empty() || trie.nodes[0].edges_count == 0) return;
  const size_t n = text.size();
  size_t prev_end = 0;
  size_t i = 0;
  while (i < n) {
    if (!trie.first_byte[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    // Longest token starting at i.
    uint32_t node = 0;
    int32_t best = -1;
    size_t best_end = 0;
    for (size_t j = i; j < n; ++j) {
      const Node& nd = trie.nodes[node];
      const auto b = static_cast<uint8_t>(text[j]);
      uint32_t next = 0;
      for (uint32_t e = nd.edges_begin; e < nd.edges_begin + nd.edges_count; ++e) {
        if (trie.edges[e].first == b) {
          next = trie.edges[e].second;
          break;
        }
      }
      if (next == 0) break;  // node 0 is the root, never a child
      node = next;
      if (trie.nodes[node].token >= 0) {
        best = trie.nodes[node].token;
        best_end = j + 1;
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken& tok = tokens_[static_cast<size_t>(best)];
    size_t start = i, end = best_end;
    if (tok.single_word) {
      size_t unused;
      bool word_before = start > 0 && IsWordChar(CodePointBefore(text, start, &unused));
      int len;
      bool word_after = end < n && IsWordChar(DecodeUtf8(text, end, &len));
      if (word_before || word_after) {
        i = end;  // the match is skipped, not searched again inside
        continue;
      }
    }
    if (tok.lstrip) {
      // Take the whitespace before the token, but not what an earlier match took.
      while (start > prev_end) {
        size_t s;
        if (!IsWhitespace(CodePointBefore(text, start, &s)) || s < prev_end) break;
        start = s;
      }
    }
    if (tok.rstrip) {
      while (end < n) {
        int len;
        if (!IsWhitespace(DecodeUtf8(text, end, &len))) break;
        end += static_cast<size_t>(len);
      }
    }
    out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(end), tok.id, tok.special});
    prev_end = end;
    i = end;
  }
}

}  // namespace shoal::native::tok
