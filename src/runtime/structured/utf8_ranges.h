// Code-point ranges as UTF-8 byte-range sequences: [U+0080, U+07FF] is
// [C2-DF][80-BF], and a range that crosses an encoding length or a
// continuation byte's span is split until each piece is such a product of
// byte ranges. How a character class ([^"\\], [à-ÿ]) becomes byte-level
// grammar elements (grammar.h). Surrogates (U+D800–U+DFFF) are never
// encoded: they are not characters.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace shoal::structured {

// One sequence: the i-th byte of a match lies in sequence[i].
using Utf8Sequence = std::vector<std::pair<uint8_t, uint8_t>>;

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// The sequences whose matches are exactly the UTF-8 encodings of the code
// points in [lo, hi] (hi ≤ kMaxCodePoint), appended to `out`.
void AppendUtf8Sequences(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>* out);

// The character at text[*pos] (moving *pos past it); nullopt, *pos
// unmoved, where the bytes are not well-formed UTF-8 (a stray or missing
// continuation byte, an overlong form, a surrogate, past U+10FFFF).
std::optional<uint32_t> DecodeUtf8(std::string_view text, size_t* pos);

// Whether `c` is a character: at most U+10FFFF and not a surrogate.
inline bool IsCharacter(uint32_t c) { return c <= kMaxCodePoint && (c < 0xD800 || c > 0xDFFF); }

}  // namespace shoal::structured
