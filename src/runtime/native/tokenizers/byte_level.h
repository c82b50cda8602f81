// GPT-2's byte-to-unicode alphabet: byte-level BPE vocabularies spell each
// byte as one printable character ('Ġ' for the space byte, 'Ċ' for '\n').
// Printable Latin-1 bytes stand for themselves; the other 68 bytes take
// U+0100 onwards in byte order.
//
// Threading: constexpr functions, no state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/native/tokenizers/unicode.h"

namespace shoal::native::tok {

constexpr bool ByteIsPrintable(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

// The code point that spells byte b.
constexpr uint32_t ByteToCodePoint(uint32_t b) {
  if (ByteIsPrintable(b)) return b;
  uint32_t n = 0;
  for (uint32_t x = 0; x < b; ++x) {
    if (!ByteIsPrintable(x)) ++n;
  }
  return 0x100 + n;
}

// The byte a code point spells, or -1 when it is not in the alphabet.
constexpr int CodePointToByte(uint32_t cp) {
  if (cp < 0x100) return ByteIsPrintable(cp) ? static_cast<int>(cp) : -1;
  if (cp >= 0x100 + 68) return -1;
  uint32_t n = cp - 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    if (!ByteIsPrintable(b)) {
      if (n == 0) return static_cast<int>(b);
      --n;
    }
  }
  return -1;
}

struct ByteLevelTable {
  uint32_t cp[256];
};

constexpr ByteLevelTable MakeByteLevelTable() {
  ByteLevelTable t{};
  for (uint32_t b = 0; b < 256; ++b) t.cp[b] = ByteToCodePoint(b);
  return t;
}

inline constexpr ByteLevelTable kByteLevelTable = MakeByteLevelTable();

// Spells raw bytes in the alphabet ("hello world" → "helloĠworld").
inline void BytesToByteLevel(std::string_view raw, std::string& out) {
  for (unsigned char b : raw) AppendUtf8(out, kByteLevelTable.cp[b]);
}

}  // namespace shoal::native::tok
