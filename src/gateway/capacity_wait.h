// CapacityWait: the requests of one lane waiting for a worker of their model
// to appear. A dispatcher queues nothing nobody can run: a request for a
// model no live worker serves waits here up to `wait` (a worker may be
// starting, or loading the model), then is answered 503 NO_CAPACITY.
//
// Threading: the lane's loop thread, as its dispatcher.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "gateway/pending.h"

namespace shoal::gateway {

class CapacityWait {
 public:
  CapacityWait(PendingTable* table, std::chrono::milliseconds wait) : table_(table), wait_(wait) {}

  void Add(const std::shared_ptr<PendingRequest>& p);

  // Offers each waiting request to `dispatch`, which sends it on and returns
  // true, or returns false while its model has no worker; refuses those that
  // waited `wait`, and forgets those finished meanwhile.
  void Tick(SteadyClock::time_point now, const std::function<bool(PendingRequest&)>& dispatch);

  // Refuses every waiting request: the gateway is shutting down.
  void RefuseAll();

 private:
  struct Waiting {
    std::shared_ptr<PendingRequest> request;
    SteadyClock::time_point give_up;
  };

  PendingTable* table_;
  const std::chrono::milliseconds wait_;
  std::vector<Waiting> waiting_;
};

}  // namespace shoal::gateway
