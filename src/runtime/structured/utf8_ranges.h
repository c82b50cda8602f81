// Code-point ranges as UTF-8 byte-range sequences: [U+0080, U+07FF] is
// [C2-DF][80-BF], and a range that crosses an encoding length or a
// continuation byte's span is split until each piece is such a product of
// byte ranges. How a character class ([^"\\], [à-ÿ]) becomes byte-level
// grammar elements (grammar.h). Surrogates (U+D800–U+DFFF) are never
// encoded: they are not characters.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace shoal::structured {

// One sequence: the i-th byte of a match lies in sequence[i].
using Utf8Sequence = std::vector<std::pair<uint8_t, uint8_t>>;

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// The sequences whose matches are exactly the UTF-8 encodings of the code
// points in [lo, hi] (hi ≤ kMaxCodePoint), appended to `out`.
void AppendUtf8Sequences(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>* out);

}  // namespace shoal::structured
