// Unicode helpers for the tokenizer: UTF-8 decoding and encoding, and the
// character classes Hugging Face tokenizers split on (whitespace, punctuation,
// CJK ideographs, ...), answered from utf8proc's tables.
//
// Threading: stateless functions over read-only tables; safe from any thread.
//
// The classes follow the Rust `tokenizers` crate (the reference the models were
// trained with), not JavaScript: whitespace is Unicode White_Space (so U+0085
// is whitespace and U+FEFF is not), numeric is the N* categories.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace shoal::native::tok {

// Length of the UTF-8 sequence that starts with byte `b` (1 for a stray
// continuation byte, so loops over unvalidated text still advance).
inline int Utf8Length(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the code point at s[i] of valid UTF-8; sets *len to its byte length.
inline uint32_t DecodeUtf8(std::string_view s, size_t i, int* len) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  unsigned char b = p[0];
  if (b < 0x80) {
    *len = 1;
    return b;
  }
  int n = Utf8Length(b);
  if (i + n > s.size()) {
    *len = 1;
    return 0xFFFD;
  }
  *len = n;
  switch (n) {
    case 2:
      return ((b & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    case 3:
      return ((b & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    case 4:
      return ((b & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    default:
      return 0xFFFD;
  }
}

void AppendUtf8(std::string& out, uint32_t cp);

// True when every byte is ASCII (the common fast path of the normalizers).
bool IsAscii(std::string_view s);

// Unicode White_Space (Rust char::is_whitespace).
bool IsWhitespace(uint32_t cp);
// ASCII punctuation or a Unicode P* character (BERT's and Punctuation's split).
bool IsPunctuation(uint32_t cp);
// N* categories (Rust char::is_numeric): the Digits pre-tokenizer.
bool IsNumeric(uint32_t cp);
// The CJK ideograph blocks BERT isolates (handle_chinese_chars).
bool IsCjkIdeograph(uint32_t cp);
// C* categories (Cc, Cf, Cn, Co, Cs) except \t \n \r: what BERT's clean_text drops.
bool IsBertControl(uint32_t cp);
// Regex \w (Unicode): letters, marks, decimal digits, connector punctuation.
bool IsWordChar(uint32_t cp);
// Letters and numbers (the "word" test of single_word added tokens), and '_'.
bool IsAlphanumeric(uint32_t cp);
// Mn only (BERT's strip_accents) and any mark M* (the StripAccents normalizer).
bool IsNonspacingMark(uint32_t cp);
bool IsMark(uint32_t cp);

// Appends the full lowercase mapping of cp (Rust char::to_lowercase: U+0130
// becomes two code points; everything else maps to one).
void AppendLowercase(std::string& out, uint32_t cp);

}  // namespace shoal::native::tok
