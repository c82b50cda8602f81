// Regex: the pre-tokenizers' and Replace normalizer's patterns, compiled with
// PCRE2 (UTF + UCP, JIT when the platform has it). The patterns in real
// tokenizer.json files need `(?i:...)`, `\p{L}` and lookahead, which PCRE2
// handles and std::regex / RE2 do not (see notes/toolchain.md).
//
// Threading: a compiled Regex is immutable and shared; FindAll uses match
// data and a JIT stack that are thread_local, so any number of threads may
// match at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/native/tokenizers/json_util.h"
#include "runtime/native/tokenizers/normalized_string.h"

namespace shoal::native::tok {

class Regex {
 public:
  // Fails with a message naming the pattern and PCRE2's reason.
  static Result<std::unique_ptr<Regex>> Compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends every non-overlapping match of `text` (valid UTF-8), left to
  // right, as byte ranges. An empty match is reported and the search resumes
  // one character later, as JavaScript's matchAll and Rust's find_iter do.
  Status FindAll(std::string_view text, std::vector<Range>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code*, kept opaque so pcre2.h stays out of headers
};

// A tokenizer.json "pattern": {"String": "..."} (returns no Regex and sets
// *literal) or {"Regex": "..."} (returns the compiled Regex).
Result<std::unique_ptr<Regex>> ParsePattern(Json json, std::string_view where,
                                            std::string* literal);

}  // namespace shoal::native::tok
