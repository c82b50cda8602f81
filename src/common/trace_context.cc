#include "common/trace_context.h"

#include <algorithm>
#include <random>

#include "common/hex.h"

namespace shoal {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is invalid in traceparent
}

// Reads 2*N lowercase hex digits into `out`.
template <size_t N>
bool ReadHex(std::string_view s, std::array<uint8_t, N>* out) {
  if (s.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    const int hi = HexDigit(s[2 * i]), lo = HexDigit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& a) {
  return std::all_of(a.begin(), a.end(), [](uint8_t b) { return b == 0; });
}

template <size_t N>
std::array<uint8_t, N> RandomId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::array<uint8_t, N> id{};
  do {
    for (size_t i = 0; i < N; i += 8) {
      const uint64_t r = rng();
      for (size_t k = 0; k < 8 && i + k < N; ++k) id[i + k] = static_cast<uint8_t>(r >> (8 * k));
    }
  } while (AllZero(id));
  return id;
}

}  // namespace

bool TraceContext::valid() const { return !AllZero(trace_id) && !AllZero(span_id); }

std::optional<TraceContext> ParseTraceparent(std::string_view h) {
  // version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55.
  constexpr size_t kLength = 55;
  if (h.size() < kLength || h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  std::array<uint8_t, 1> version{}, flags{};
  TraceContext c;
  if (!ReadHex(h.substr(0, 2), &version) || version[0] == 0xff) return std::nullopt;
  // Version 00 is exactly 55 characters; a later one may append fields
  // after a '-'.
  if (h.size() > kLength && (version[0] == 0 || h[kLength] != '-')) return std::nullopt;
  if (!ReadHex(h.substr(3, 32), &c.trace_id) || !ReadHex(h.substr(36, 16), &c.span_id) ||
      !ReadHex(h.substr(53, 2), &flags) || !c.valid()) {
    return std::nullopt;
  }
  c.flags = flags[0];
  return c;
}

std::string FormatTraceparent(const TraceContext& c) {
  const uint8_t flags = c.flags;
  return "00-" + TraceIdHex(c.trace_id) + "-" + SpanIdHex(c.span_id) + "-" + LowerHex(&flags, 1);
}

TraceId NewTraceId() { return RandomId<16>(); }
SpanId NewSpanId() { return RandomId<8>(); }

std::string TraceIdHex(const TraceId& id) { return LowerHex(id.data(), id.size()); }
std::string SpanIdHex(const SpanId& id) { return LowerHex(id.data(), id.size()); }

}  // namespace shoal
