#include "worker/sequence_engine.h"

namespace shoal::worker {

uint64_t SequenceSeed(std::optional<uint64_t> seed, std::string_view request_id, uint32_t item) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the request id
  for (unsigned char c : request_id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h = seed.value_or(h);
  if (item == 0) return h;
  // SplitMix64's finaliser over seed + item: neighbouring seeds and items
  // give unrelated streams.
  uint64_t z = h + item * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace shoal::worker
