// MsgpackWriter: appends MessagePack to a std::string, choosing the smallest
// encoding for each value. Header-only because every call is a few bytes of
// work on the data path.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace shoal::wire {

class MsgpackWriter {
 public:
  explicit MsgpackWriter(std::string* out) : out_(out) {}

  void Nil() { Byte(0xc0); }
  void Bool(bool v) { Byte(v ? 0xc3 : 0xc2); }

  void Int(int64_t v) {
    if (v >= 0) return Uint(static_cast<uint64_t>(v));
    if (v >= -32) return Byte(static_cast<unsigned char>(v));
    if (v >= INT8_MIN) return Tagged(0xd0, static_cast<uint8_t>(v), 1);
    if (v >= INT16_MIN) return Tagged(0xd1, static_cast<uint16_t>(v), 2);
    if (v >= INT32_MIN) return Tagged(0xd2, static_cast<uint32_t>(v), 4);
    Tagged(0xd3, static_cast<uint64_t>(v), 8);
  }

  void Uint(uint64_t v) {
    if (v <= 0x7f) return Byte(static_cast<unsigned char>(v));
    if (v <= UINT8_MAX) return Tagged(0xcc, v, 1);
    if (v <= UINT16_MAX) return Tagged(0xcd, v, 2);
    if (v <= UINT32_MAX) return Tagged(0xce, v, 4);
    Tagged(0xcf, v, 8);
  }

  void Float32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    Tagged(0xca, bits, 4);
  }

  // An array of float32, written in one pass (the hot path of every result).
  void Float32Array(const float* v, size_t n) {
    ArrayHeader(static_cast<uint32_t>(n));
    const size_t at = out_->size();
    out_->resize(at + 5 * n);
    char* p = out_->data() + at;
    for (size_t i = 0; i < n; ++i, p += 5) {
      uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      bits = __builtin_bswap32(bits);  // MessagePack is big-endian
      p[0] = static_cast<char>(0xca);
      std::memcpy(p + 1, &bits, 4);
    }
  }

  void Float64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    Tagged(0xcb, bits, 8);
  }

  void Str(std::string_view s) {
    const size_t n = s.size();
    if (n <= 31) Byte(static_cast<unsigned char>(0xa0 | n));
    else if (n <= UINT8_MAX) Tagged(0xd9, n, 1);
    else if (n <= UINT16_MAX) Tagged(0xda, n, 2);
    else Tagged(0xdb, n, 4);
    out_->append(s);
  }

  void Bin(std::string_view b) {
    const size_t n = b.size();
    if (n <= UINT8_MAX) Tagged(0xc4, n, 1);
    else if (n <= UINT16_MAX) Tagged(0xc5, n, 2);
    else Tagged(0xc6, n, 4);
    out_->append(b);
  }

  void ArrayHeader(uint32_t n) {
    if (n <= 15) Byte(static_cast<unsigned char>(0x90 | n));
    else if (n <= UINT16_MAX) Tagged(0xdc, n, 2);
    else Tagged(0xdd, n, 4);
  }

  void MapHeader(uint32_t n) {
    if (n <= 15) Byte(static_cast<unsigned char>(0x80 | n));
    else if (n <= UINT16_MAX) Tagged(0xde, n, 2);
    else Tagged(0xdf, n, 4);
  }

  // Bytes that already are one encoded value (splicing).
  void Raw(std::string_view encoded) { out_->append(encoded); }

 private:
  void Byte(unsigned char b) { out_->push_back(static_cast<char>(b)); }

  // A tag byte followed by `n` big-endian bytes of `v`.
  void Tagged(unsigned char tag, uint64_t v, int n) {
    char buf[9];
    buf[0] = static_cast<char>(tag);
    for (int i = 0; i < n; ++i) buf[1 + i] = static_cast<char>(v >> (8 * (n - 1 - i)));
    out_->append(buf, 1 + n);
  }

  std::string* out_;
};

}  // namespace shoal::wire
