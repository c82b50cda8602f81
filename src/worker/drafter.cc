#include "worker/drafter.h"

#include <algorithm>
#include <cmath>

namespace shoal::worker {

uint32_t DraftLength(double acceptance, uint32_t k_max) {
  if (acceptance < kMinAcceptance) return 0;
  if (acceptance >= 1.0) return k_max;
  const double run = acceptance / (1.0 - acceptance);
  return static_cast<uint32_t>(std::clamp<double>(std::round(run), 1.0, k_max));
}

}  // namespace shoal::worker
