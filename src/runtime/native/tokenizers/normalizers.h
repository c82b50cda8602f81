// Normalizers: the tokenizer.json "normalizer" stage (NFC, NFKC, NFD, NFKD,
// Lowercase, StripAccents, Strip, Replace, Prepend, BertNormalizer,
// Precompiled, Sequence), each rewriting a NormalizedString in place with its
// alignment.
//
// Threading: a parsed Normalizer is immutable; Normalize may run on many
// threads at once.
#pragma once

#include <memory>
#include <string_view>

#include "common/status.h"
#include "runtime/native/tokenizers/json_util.h"
#include "runtime/native/tokenizers/normalized_string.h"

namespace shoal::native::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Fails only where a regex match fails (an input that exhausts PCRE2).
  virtual Status Normalize(NormalizedString& s) const = 0;
};

// Builds the normalizer a tokenizer.json "normalizer" object describes;
// `where` is its JSON path for error messages.
Result<std::unique_ptr<Normalizer>> ParseNormalizer(Json json, std::string_view where);

}  // namespace shoal::native::tok
