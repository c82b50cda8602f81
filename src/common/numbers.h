// Reading numbers out of text that crosses a process boundary (subjects,
// headers, flags): strictly, so that garbage is refused rather than read
// as a prefix.
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>

namespace shoal {

// A non-negative decimal with nothing around it; false on anything else
// (empty, a sign, trailing bytes, overflow).
inline bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace shoal
