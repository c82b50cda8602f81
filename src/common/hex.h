// Bytes as lowercase hexadecimal, two digits per byte (digests, secrets).
#pragma once

#include <cstddef>
#include <string>

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

}  // namespace shoal
