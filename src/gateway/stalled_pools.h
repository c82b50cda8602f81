// StalledPools: the pools whose work stream stores nothing right now (its
// leader's server died and the stream is electing another), as the
// gateway's lanes find them (queue_dispatcher.h). One set for the whole
// gateway: a lane whose requests were all stored before the leader died
// publishes nothing that could tell it, yet its items wait in the same
// stream, and are hedged as soon as any lane has noticed.
//
// Threading: any lane, any time; a mutex guards the set, and an atomic count
// keeps the common case (nothing stalled) to one load.
#pragma once

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace shoal::gateway {

class StalledPools {
 public:
  // Both return whether this call changed the set.
  bool Mark(std::string_view pool);
  bool Clear(std::string_view pool);
  bool Contains(std::string_view pool) const;
  bool empty() const { return count_.load(std::memory_order_acquire) == 0; }

 private:
  mutable std::mutex mu_;
  std::set<std::string, std::less<>> pools_;  // guarded by mu_
  std::atomic<size_t> count_{0};              // pools_.size()
};

}  // namespace shoal::gateway
