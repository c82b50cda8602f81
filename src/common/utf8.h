// UTF-8 validity, as RFC 3629 defines it: no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing past U+10FFFF, no truncated sequence. Text that
// reaches JSON (catalog records, answers) must be valid: nlohmann's dump
// throws on anything else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace shoal {

// The offset of the first byte that starts no valid character, or npos
// when `text` is valid UTF-8.
inline size_t FirstInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const uint8_t b = s[i];
    size_t len;
    uint32_t min, cp;
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2, min = 0x80, cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, min = 0x800, cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, cp = b & 0x07;
    } else {
      return i;
    }
    if (n - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace shoal
