// Dispatcher: how a gateway gets a request's items run. Two real
// implementations:
//   QueueDispatcher      JetStream work queue → pulling workers (the product)
//   InProcessDispatcher  the runtime called in the gateway process (the
//                        baseline the serving-plane benchmark compares with)
// Both finish the request through the PendingTable: results, an error, or
// (on the sweeper) the deadline.
#pragma once

#include <memory>

#include "gateway/pending.h"

namespace shoal::gateway {

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;

  // `p` is in the table already. May finish it before returning.
  virtual void Submit(const std::shared_ptr<PendingRequest>& p) = 0;

  // Called by the sweeper every few milliseconds (capacity waits).
  virtual void Tick(SteadyClock::time_point now) {}

  // No more results after this returns.
  virtual void Stop() {}

  // Whether some worker (or the process itself) can run `model_id`.
  virtual bool HasCapacity(std::string_view model_id) const = 0;
};

}  // namespace shoal::gateway
