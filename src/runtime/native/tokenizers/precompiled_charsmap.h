// SentencePiece's precompiled character map (`precompiled_charsmap`, the
// normalization rules of nmt_nfkc and the other built-in rule sets, as the
// tokenizer.json "Precompiled" normalizer carries them): a double-array trie
// (the darts-clone layout) over UTF-8 byte strings whose values index a blob
// of NUL-terminated replacements.
//
// The blob: a little-endian uint32 (the trie's size in bytes), the trie's
// 32-bit units, then the replacement strings. Every unit read is checked
// against the blob's bounds: a model file is untrusted input.
//
// Threading: immutable after Parse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::native::tok {

class PrecompiledCharsmap {
 public:
  // `blob` is the decoded bytes (not base64). An empty blob maps nothing.
  static Result<PrecompiledCharsmap> Parse(std::string_view blob);

  struct Match {
    size_t length = 0;             // bytes of the input replaced; 0: no rule applies
    std::string_view replacement;  // may be empty (the rule deletes)
  };
  // The longest rule that matches a prefix of `input`, as SentencePiece's
  // normalizer applies them left to right.
  Match Longest(std::string_view input) const;

 private:
  std::vector<uint32_t> units_;
  std::string replacements_;
};

}  // namespace shoal::native::tok
