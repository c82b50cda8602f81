#include "gateway/stalled_pools.h"

namespace shoal::gateway {

bool StalledPools::Mark(std::string_view pool) {
  std::lock_guard lock(mu_);
  if (!pools_.emplace(pool).second) return false;
  count_.store(pools_.size(), std::memory_order_release);
  return true;
}

bool StalledPools::Clear(std::string_view pool) {
  if (empty()) return false;
  std::lock_guard lock(mu_);
  auto it = pools_.find(pool);
  if (it == pools_.end()) return false;
  pools_.erase(it);
  count_.store(pools_.size(), std::memory_order_release);
  return true;
}

bool StalledPools::Contains(std::string_view pool) const {
  if (empty()) return false;
  std::lock_guard lock(mu_);
  return pools_.contains(pool);
}

}  // namespace shoal::gateway
