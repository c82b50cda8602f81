// Dispatcher: how a gateway lane gets a request's items run. The product's
// is QueueDispatcher (the JetStream work queue, pulled by workers); the
// benchmarks bring their baselines (src/baselines: the runtime called in
// the gateway process, and a router pushing each request to one worker)
// through GatewayOptions::dispatchers, so the gateway links none of them.
// Every dispatcher finishes the request through the PendingTable: results,
// an error, or (on the sweeper) the deadline.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/event_loop.h"
#include "common/metrics.h"
#include "gateway/pending.h"
#include "gateway/stalled_pools.h"
#include "queue/nats.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;

  // `p` is in the table already. May finish it before returning.
  virtual void Submit(const std::shared_ptr<PendingRequest>& p) = 0;

  // The client of `p` hung up (p is still pending; the router finishes it
  // next): tell the workers not to start its items, where they can be told.
  virtual void Cancel(const PendingRequest& p) {}

  // Called by the sweeper every few milliseconds (capacity waits).
  virtual void Tick(SteadyClock::time_point now) {}

  // No more results after this returns.
  virtual void Stop() {}

  // Whether some worker (or the process itself) can run `model_id`.
  virtual bool HasCapacity(std::string_view model_id) const = 0;

  // The largest message its transport takes (0: no limit): what an item
  // must fit, less its header.
  virtual int64_t MaxPayload() const { return 0; }

  // Whether it queues by priority class (queue/priority.h); the router
  // refuses a batch-class request to one that does not.
  virtual bool HasPriorityClasses() const { return false; }
};

// What a lane gives the dispatcher it makes.
struct LaneSetup {
  EventLoop* loop = nullptr;  // the lane's; the dispatcher runs on its thread
  std::string lane_id;        // <gateway-id>-<n>
  PendingTable* table = nullptr;
  queue::WorkerRegistry* workers = nullptr;  // null without NATS; told of answers
  queue::ConnectOptions nats;                      // url and security; no url without NATS
  std::chrono::milliseconds no_capacity_wait{2000};
  // The queue's hedging (queue_dispatcher.h): how long an item may go
  // unstored before its pool counts as between leaders (or stored and
  // undelivered before idle workers get a copy); the gateway's set of such
  // pools (null: no hedging); the count of copies sent.
  std::chrono::milliseconds hedge_after{500};
  StalledPools* stalled_pools = nullptr;
  Counter* hedged_items = nullptr;
};

// Makes (and starts) one lane's dispatcher.
using DispatcherFactory = std::function<Result<std::unique_ptr<Dispatcher>>(const LaneSetup& lane)>;

}  // namespace shoal::gateway
