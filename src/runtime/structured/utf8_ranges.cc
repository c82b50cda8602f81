#include "runtime/structured/utf8_ranges.h"

namespace shoal::structured {
namespace {

int EncodedLength(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

void Encode(uint32_t c, uint8_t* out) {
  const int n = EncodedLength(c);
  if (n == 1) {
    out[0] = static_cast<uint8_t>(c);
    return;
  }
  static constexpr uint8_t kLead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (c & 0x3F));
    c >>= 6;
  }
  out[0] = static_cast<uint8_t>(kLead[n] | c);
}

}  // namespace

std::optional<uint32_t> DecodeUtf8(std::string_view text, size_t* pos) {
  if (*pos >= text.size()) return std::nullopt;
  const auto c = static_cast<unsigned char>(text[*pos]);
  const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || *pos + n > text.size()) return std::nullopt;
  uint32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (int i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(text[*pos + i]);
    if ((b & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (!IsCharacter(cp) || EncodedLength(cp) != n) return std::nullopt;  // a surrogate, too large, or overlong
  *pos += n;
  return cp;
}

void AppendUtf8Sequences(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>* out) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {  // surrogates are left out
    if (lo < 0xD800) AppendUtf8Sequences(lo, 0xD7FF, out);
    if (hi > 0xDFFF) AppendUtf8Sequences(0xE000, hi, out);
    return;
  }
  for (uint32_t last : {0x7Fu, 0x7FFu, 0xFFFFu}) {  // one encoded length per piece
    if (lo <= last && hi > last) {
      AppendUtf8Sequences(lo, last, out);
      AppendUtf8Sequences(last + 1, hi, out);
      return;
    }
  }
  const int n = EncodedLength(lo);
  // Split until, for each count i of trailing continuation bytes, lo and hi
  // either share everything above them or span all their values.
  for (int i = 1; i < n; ++i) {
    const uint32_t low_bits = (1u << (6 * i)) - 1;
    if ((lo & ~low_bits) == (hi & ~low_bits)) continue;
    if ((lo & low_bits) != 0) {
      AppendUtf8Sequences(lo, lo | low_bits, out);
      AppendUtf8Sequences((lo | low_bits) + 1, hi, out);
      return;
    }
    if ((hi & low_bits) != low_bits) {
      AppendUtf8Sequences(lo, (hi & ~low_bits) - 1, out);
      AppendUtf8Sequences(hi & ~low_bits, hi, out);
      return;
    }
  }
  uint8_t a[4], b[4];
  Encode(lo, a);
  Encode(hi, b);
  Utf8Sequence seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out->push_back(std::move(seq));
}

}  // namespace shoal::structured
