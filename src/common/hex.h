// Bytes as lowercase hexadecimal, two digits per byte (digests, secrets).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace shoal {

inline std::string LowerHex(const unsigned char* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

// Whether `s` is a SHA-256 as this project writes them: 64 lowercase hex
// digits (file and manifest digests, object names).
inline bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace shoal
