// Dispatcher: how a gateway gets a request's items run. Three real
// implementations:
//   QueueDispatcher      JetStream work queue → pulling workers (the product)
//   InProcessDispatcher  the runtime called in the gateway process (the
//                        baseline the serving-plane benchmark compares with)
//   PushDispatcher       the gateway assigns each request to one worker, as
//                        vLLM's and SGLang's routers do (the other baseline)
// Both finish the request through the PendingTable: results, an error, or
// (on the sweeper) the deadline.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "gateway/pending.h"

namespace shoal::gateway {

// How a gateway's workers get work (`shoal gateway --dispatch`).
enum class DispatchMode {
  kPull,                  // "pull": the JetStream queue (QueueDispatcher)
  kPushRoundRobin,        // "push-rr": PushDispatcher, round-robin
  kPushLeastOutstanding,  // "push-lo": PushDispatcher, least outstanding items
};

inline std::optional<DispatchMode> ParseDispatchMode(std::string_view name) {
  if (name == "pull") return DispatchMode::kPull;
  if (name == "push-rr") return DispatchMode::kPushRoundRobin;
  if (name == "push-lo") return DispatchMode::kPushLeastOutstanding;
  return std::nullopt;
}

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
};

}  // namespace shoal::gateway
