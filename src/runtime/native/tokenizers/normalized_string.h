// NormalizedString: text being normalized and pre-tokenized, with, for each of
// its bytes, the byte range of the original input it came from. Token offsets
// are read through it, so they point into the caller's text however the
// normalizer rewrote it (NFC, lowercase, "▁" for " ", ...).
//
// Alignment is kept per byte. Untouched text needs none (the identity: byte i
// is original byte base+i), so text that no normalizer changes costs nothing;
// the first rewrite materializes the table. A rewritten character's output
// bytes all map to the whole original character (or segment, for Unicode
// normalization), as in Hugging Face tokenizers; unchanged bytes keep their own
// byte offsets.
//
// Threading: a value type used by one Encode call at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/native/tokenizers/unicode.h"

namespace shoal::native::tok {

struct Range {
  uint32_t start = 0;
  uint32_t end = 0;
};

enum class UnicodeForm { kNFC, kNFD, kNFKC, kNFKD };

class NormalizedString {
 public:
  NormalizedString() = default;
  // `original` is the part of the caller's text that starts at byte `base`.
  NormalizedString(std::string_view original, uint32_t base) : text_(original), base_(base) {}

  const std::string& text() const { return text_; }
  size_t size() const { return text_.size(); }
  bool empty() const { return text_.empty(); }

  // The original byte range that text bytes [start, end) came from.
  Range Original(uint32_t start, uint32_t end) const {
    if (align_.empty() && !materialized_) return {base_ + start, base_ + end};
    if (start >= end) {
      uint32_t at = start < align_.size() ? align_[start].start
                                          : (align_.empty() ? base_ : align_.back().end);
      return {at, at};
    }
    return {align_[start].start, align_[end - 1].end};
  }

  // Building a string piece by piece (the normalizers' rewrites, the
  // pre-tokenizers' modified pieces).
  void AppendMapped(std::string_view bytes, Range original);
  void AppendFrom(const NormalizedString& src, uint32_t start, uint32_t end);
  // An empty string with the same base whose alignment is explicit.
  NormalizedString EmptyLike() const {
    NormalizedString s;
    s.base_ = base_;
    s.materialized_ = true;
    return s;
  }

  // Rewrites every character through fn(cp, out), which appends the
  // replacement (nothing drops the character). Characters whose replacement
  // is their own bytes keep their byte alignment.
  template <class Fn>
  void MapChars(Fn&& fn);

  void UnicodeNormalize(UnicodeForm form);
  void Lowercase();
  // Replaces every occurrence of `pattern` (non-overlapping, left to right).
  void ReplaceAll(std::string_view pattern, std::string_view content);
  // Replaces the given byte ranges (sorted, disjoint) with `content`.
  void ReplaceRanges(const std::vector<Range>& ranges, std::string_view content);
  // Prepends `s`, aligned with the first character (as Hugging Face does).
  void Prepend(std::string_view s);
  void Strip(bool left, bool right);

 private:
  void Materialize();

  std::string text_;
  std::vector<Range> align_;  // per byte of text_; empty with !materialized_: identity
  uint32_t base_ = 0;
  bool materialized_ = false;
};

template <class Fn>
void NormalizedString::MapChars(Fn&& fn) {
  NormalizedString out = EmptyLike();
  out.text_.reserve(text_.size() + text_.size() / 8);
  out.align_.reserve(text_.size() + text_.size() / 8);
  std::string repl;
  for (size_t i = 0; i < text_.size();) {
    int len;
    uint32_t cp = DecodeUtf8(text_, i, &len);
    repl.clear();
    fn(cp, repl);
    if (repl.size() == static_cast<size_t>(len) && text_.compare(i, len, repl) == 0) {
      out.AppendFrom(*this, i, i + len);
    } else if (!repl.empty()) {
      out.AppendMapped(repl, Original(i, i + len));
    }
    i += len;
  }
  *this = std::move(out);
}

}  // namespace shoal::native::tok
