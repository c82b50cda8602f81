// AddedTokens: tokenizer.json "added_tokens" — special tokens ("<|im_start|>",
// "[CLS]") and extra vocabulary that is matched in the text before the model
// runs, so it is never split.
//
// Tokens with `normalized: false` are found in the raw input; those with
// `normalized: true` in the normalized text, against their own normalized
// spelling. Matching is leftmost-longest (a byte trie walked from each
// position whose first byte can start a token). The flags follow the Rust
// crate: single_word rejects a match touching a word character (\w) on
// either side; lstrip/rstrip widen the match over adjacent whitespace.
//
// Threading: immutable after Load; FindMatches may run on many threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/native/tokenizers/json_util.h"
#include "runtime/native/tokenizers/vocab.h"

namespace shoal::native::tok {

class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool normalized = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
};

struct AddedMatch {
  uint32_t start;  // byte range in the searched text, widened by lstrip/rstrip
  uint32_t end;
  int32_t id;
  bool special;
};

class AddedTokens {
 public:
  // Reads the "added_tokens" array; `normalizer` (may be null) spells the
  // normalized ones as they will appear in normalized text.
  Status Load(Json array, const Normalizer* normalizer);

  // Appends the matches in `text` of the raw (normalized == false) or the
  // normalized set, left to right, non-overlapping.
  void FindMatches(std::string_view text, bool normalized_set, std::vector<AddedMatch>& out) const;

  bool has_raw() const { return !raw_.nodes.empty() && raw_.nodes[0].edges_count > 0; }
  bool has_normalized() const {
    return !normalized_.nodes.empty() && normalized_.nodes[0].edges_count > 0;
  }

  std::optional<int32_t> Find(std::string_view content) const { return by_content_.Find(content); }
  std::string_view Token(int32_t id) const { return by_content_.Token(id); }
  size_t id_space() const { return by_content_.id_space(); }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Node {
    int32_t token = -1;  // index into tokens_ of the token ending here
    uint32_t edges_begin = 0;
    uint32_t edges_count = 0;
  };
  struct Trie {
    std::vector<Node> nodes;
    std::vector<std::pair<uint8_t, uint32_t>> edges;  // (byte, child), per node contiguous
    bool first_byte[256] = {};
  };
  static void BuildTrie(const std::vector<std::pair<std::string, int32_t>>& words, Trie& trie);

  std::vector<AddedToken> tokens_;
  Vocab by_content_;
  Trie raw_;
  Trie normalized_;
};

}  // namespace shoal::native::tok
