// NormalizedString's rewrites. Unicode normalization goes through utf8proc one
// segment at a time so each rewritten segment keeps its own alignment.
// Threading: see the header; the scratch buffer is thread_local.
#include "runtime/native/tokenizers/normalized_string.h"

#include <utf8proc.h>

namespace shoal::native::tok {

void NormalizedString::Materialize() {
  if (materialized_) return;
  align_.resize(text_.size());
  for (uint32_t i = 0; i < text_.size(); ++i) align_[i] = {base_ + i, base_ + i + 1};
  materialized_ = true;
}

void NormalizedString::AppendMapped(std::string_view bytes, Range original) {
  Materialize();
  text_.append(bytes);
  align_.insert(align_.end(), bytes.size(), original);
}

void NormalizedString::AppendFrom(const NormalizedString& src, uint32_t start, uint32_t end) {
  Materialize();
  text_.append(src.text_, start, end - start);
  if (!src.materialized_) {
    for (uint32_t i = start; i < end; ++i) align_.push_back({src.base_ + i, src.base_ + i + 1});
  } else {
    align_.insert(align_.end(), src.align_.begin() + start, src.align_.begin() + end);
  }
}

namespace {

bool IsHangulSyllable(uint32_t cp) { return cp >= 0xAC00 && cp <= 0xD7A3; }

// Whether a normalization segment may start at cp: nothing before it can
// reorder with it or compose with it, in this form. What decides is the first
// code point of cp's decomposition in the form, not cp itself: halfwidth ﾞ
// (U+FF9E) is a starter, but under NFKC it becomes U+3099, a combining mark
// that composes with the カ before it. Composition and canonical reordering
// never cross such a point, so segments normalize independently.
bool StartsSegment(uint32_t cp, bool compose, bool compat) {
  if (cp < 0x80) return true;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  if (p->decomp_seqindex != UINT16_MAX && (compat || p->decomp_type == 0)) {
    utf8proc_int32_t decomposed[32];  // the longest decomposition (U+FDFA) is 18
    int boundclass = 0;
    const int opts = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
    const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), decomposed, 32,
                                           static_cast<utf8proc_option_t>(opts), &boundclass);
    if (n <= 0 || n > 32) return false;  // not expected; a longer segment is always correct
    cp = static_cast<uint32_t>(decomposed[0]);
    p = utf8proc_get_property(decomposed[0]);
  }
  if (p->combining_class != 0) return false;
  if (!compose) return true;
  if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return false;  // Jamo V, T
  // utf8proc marks code points that can be the second of a composition pair
  // with the high bit of comb_index.
  return !(p->comb_index != UINT16_MAX && (p->comb_index & 0x8000));
}

// A lone starter without any decomposition is its own normal form.
bool StableAlone(uint32_t cp, bool decomposes_hangul) {
  if (cp < 0xA0) return true;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  if (p->combining_class != 0 || p->decomp_seqindex != UINT16_MAX) return false;
  return !(decomposes_hangul && IsHangulSyllable(cp));
}

}  // namespace

void NormalizedString::UnicodeNormalize(UnicodeForm form) {
  if (IsAscii(text_)) return;  // ASCII is in every normal form
  const bool compose = form == UnicodeForm::kNFC || form == UnicodeForm::kNFKC;
  const bool compat = form == UnicodeForm::kNFKC || form == UnicodeForm::kNFKD;
  int opts = UTF8PROC_STABLE | (compose ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE);
  if (compat) opts |= UTF8PROC_COMPAT;
  const auto options = static_cast<utf8proc_option_t>(opts);

  thread_local std::vector<utf8proc_int32_t> buf;
  if (buf.size() < 64) buf.resize(64);
  // `out` is only built once a segment actually changes: most non-ASCII text
  // (CJK, Cyrillic, already-NFC accents) passes through untouched.
  NormalizedString out;
  bool changed = false;
  size_t copied = 0;  // text_ before this is already in `out`
  std::string seg_out;
  size_t i = 0;
  while (i < text_.size()) {
    int len;
    uint32_t cp = DecodeUtf8(text_, i, &len);
    size_t j = i + len;
    while (j < text_.size()) {
      int l2;
      uint32_t c2 = DecodeUtf8(text_, j, &l2);
      if (StartsSegment(c2, compose, compat)) break;
      j += l2;
    }
    if (j == i + static_cast<size_t>(len) && StableAlone(cp, !compose)) {
      i = j;
      continue;
    }
    const auto* src = reinterpret_cast<const utf8proc_uint8_t*>(text_.data() + i);
    auto n = utf8proc_decompose(src, static_cast<utf8proc_ssize_t>(j - i), buf.data(),
                                static_cast<utf8proc_ssize_t>(buf.size()), options);
    if (n > static_cast<utf8proc_ssize_t>(buf.size())) {
      buf.resize(static_cast<size_t>(n));
      n = utf8proc_decompose(src, static_cast<utf8proc_ssize_t>(j - i), buf.data(),
                             static_cast<utf8proc_ssize_t>(buf.size()), options);
    }
    if (n >= 0 && compose) n = utf8proc_normalize_utf32(buf.data(), n, options);
    if (n < 0) {  // cannot happen on valid UTF-8; keep the text rather than lose it
      i = j;
      continue;
    }
    seg_out.clear();
    for (utf8proc_ssize_t k = 0; k < n; ++k) AppendUtf8(seg_out, static_cast<uint32_t>(buf[k]));
    if (text_.compare(i, j - i, seg_out) != 0) {
      if (!changed) {
        out = EmptyLike();
        out.text_.reserve(text_.size() + 8);
        out.align_.reserve(text_.size() + 8);
        changed = true;
      }
      out.AppendFrom(*this, static_cast<uint32_t>(copied), static_cast<uint32_t>(i));
      out.AppendMapped(seg_out, Original(static_cast<uint32_t>(i), static_cast<uint32_t>(j)));
      copied = j;
    }
    i = j;
  }
  if (!changed) return;
  out.AppendFrom(*this, static_cast<uint32_t>(copied), static_cast<uint32_t>(text_.size()));
  *this = std::move(out);
}

void NormalizedString::Lowercase() {
  if (IsAscii(text_)) {
    // Same length, same alignment: lowercase in place.
    for (char& c : text_) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    }
    return;
  }
  MapChars([](uint32_t cp, std::string& o) { AppendLowercase(o, cp); });
}

void NormalizedString::ReplaceRanges(const std::vector<Range>& ranges, std::string_view content) {
  if (ranges.empty()) return;
  NormalizedString out = EmptyLike();
  uint32_t at = 0;
  for (const Range& r : ranges) {
    if (r.start > at) out.AppendFrom(*this, at, r.start);
    if (!content.empty()) out.AppendMapped(content, Original(r.start, r.end));
    at = r.end;
  }
  if (at < text_.size()) out.AppendFrom(*this, at, static_cast<uint32_t>(text_.size()));
  *this = std::move(out);
}

void NormalizedString::ReplaceAll(std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return;
  std::vector<Range> found;
  std::string_view t = text_;
  for (size_t pos = t.find(pattern); pos != std::string_view::npos;
       pos = t.find(pattern, pos + pattern.size())) {
    found.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(pos + pattern.size())});
  }
  ReplaceRanges(found, content);
}

void NormalizedString::Prepend(std::string_view s) {
  if (s.empty()) return;
  NormalizedString out = EmptyLike();
  Range first{base_, base_};
  if (!text_.empty()) {
    int len;
    DecodeUtf8(text_, 0, &len);
    first = Original(0, static_cast<uint32_t>(len));
  }
  out.AppendMapped(s, first);
  out.AppendFrom(*this, 0, static_cast<uint32_t>(text_.size()));
  *this = std::move(out);
}

void NormalizedString::Strip(bool left, bool right) {
  uint32_t start = 0, end = static_cast<uint32_t>(text_.size());
  if (left) {
    while (start < end) {
      int len;
      uint32_t cp = DecodeUtf8(text_, start, &len);
      if (!IsWhitespace(cp)) break;
      start += len;
    }
  }
  if (right) {
    while (end > start) {
      uint32_t k = end - 1;
      while (k > start && (static_cast<unsigned char>(text_[k]) & 0xC0) == 0x80) --k;
      int len;
      uint32_t cp = DecodeUtf8(text_, k, &len);
      if (!IsWhitespace(cp)) break;
      end = k;
    }
  }
  if (start == 0 && end == text_.size()) return;
  if (!materialized_) {  // identity alignment: a substring is just a new base
    text_ = text_.substr(start, end - start);
    base_ += start;
    return;
  }
  NormalizedString out = EmptyLike();
  out.AppendFrom(*this, start, end);
  *this = std::move(out);
}

}  // namespace shoal::native::tok
