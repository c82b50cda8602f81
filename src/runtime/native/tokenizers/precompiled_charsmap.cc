#include "runtime/native/tokenizers/precompiled_charsmap.h"

#include <cstring>

#include "runtime/native/tokenizers/json_util.h"

namespace shoal::native::tok {
namespace {

// A darts-clone unit: bit 8 says a leaf hangs below, bits 0-7 (and bit 31)
// are the label, bits 10-30 the offset to the children (shifted left by 8
// when bit 9 is set); a leaf unit's low 31 bits are its value.
bool HasLeaf(uint32_t unit) { return (unit >> 8) & 1; }
uint32_t Value(uint32_t unit) { return unit & 0x7FFFFFFFu; }
uint32_t Label(uint32_t unit) { return unit & 0x800000FFu; }
uint32_t Offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

Status Corrupt(const std::string& what) { return LoadError("normalizer.precompiled_charsmap", what); }

}  // namespace

Result<PrecompiledCharsmap> PrecompiledCharsmap::Parse(std::string_view blob) {
  PrecompiledCharsmap map;
  if (blob.empty()) return map;
  if (blob.size() < 4) return Corrupt("shorter than its header");
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | static_cast<unsigned char>(blob[i]);
  if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4) {
    return Corrupt("a trie of " + std::to_string(trie_bytes) + " bytes in a blob of " +
                   std::to_string(blob.size()));
  }
  map.units_.resize(trie_bytes / 4);
  for (size_t u = 0; u < map.units_.size(); ++u) {
    const auto* p = reinterpret_cast<const unsigned char*>(blob.data() + 4 + 4 * u);
    map.units_[u] = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
  }
  map.replacements_.assign(blob.substr(4 + trie_bytes));
  if (map.units_.empty()) return Corrupt("an empty trie");
  return map;
}

PrecompiledCharsmap::Match PrecompiledCharsmap::Longest(std::string_view input) const {
  Match best;
  if (units_.empty()) return best;
  const size_t n = units_.size();
  size_t node = Offset(units_[0]);
  for (size_t i = 0; i < input.size(); ++i) {
    const auto byte = static_cast<unsigned char>(input[i]);
    node ^= byte;
    if (node >= n) return best;
    const uint32_t unit = units_[node];
    if (Label(unit) != byte) return best;
    node ^= Offset(unit);
    if (!HasLeaf(unit)) continue;
    if (node >= n) return best;
    const uint32_t at = Value(units_[node]);
    if (at >= replacements_.size()) return best;  // a corrupt value: no rule
    const char* s = replacements_.data() + at;
    const void* nul = std::memchr(s, '\0', replacements_.size() - at);
    if (nul == nullptr) return best;
    best.length = i + 1;
    best.replacement = std::string_view(s, static_cast<const char*>(nul) - s);
  }
  return best;
}

}  // namespace shoal::native::tok
