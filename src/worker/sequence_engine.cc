#include "worker/sequence_engine.h"

namespace shoal::worker {

uint64_t SeedFromRequestId(std::string_view request_id) {  // FNV-1a
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : request_id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace shoal::worker
