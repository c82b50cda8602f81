#include "worker/ngram_drafter.h"

#include <algorithm>

namespace shoal::worker {

Status NgramDrafter::Propose(std::span<DraftAsk> asks, int /*threads*/) {
  for (DraftAsk& a : asks) {
    const std::span<const int32_t> t = a.tokens;
    const size_t len = t.size();
    for (size_t n = std::min<size_t>(kMaxN, len > 0 ? len - 1 : 0); n >= kMinN && a.proposed.empty(); --n) {
      const std::span<const int32_t> suffix = t.subspan(len - n);
      // The latest earlier occurrence: its end must leave a token after it.
      for (size_t start = len - n; start-- > 0;) {
        if (!std::equal(suffix.begin(), suffix.end(), t.begin() + start)) continue;
        const size_t from = start + n;
        const size_t count = std::min<size_t>(a.k, len - from);
        a.proposed.assign(t.begin() + from, t.begin() + from + count);
        break;
      }
    }
  }
  return Status::Ok();
}

}  // namespace shoal::worker
