// PushIntake: a worker's way in for the push baseline (push_dispatcher.h).
// It subscribes, on the worker's intake loop, to shoal.push.<worker-token>.>,
// where a pushing gateway sends the items it assigned to this worker over
// core NATS, and hands each to the worker as an item that came outside
// JetStream (worker/intake.h Accept): no ack, no redelivery; where a pulled
// item would be naked back (model not served here, shutting down) a pushed
// one is answered NO_CAPACITY at once. Pushed items join the same local
// queue as pulled ones.
//
// `shoal worker --accept-push` attaches one; the benchmarks' pushing
// gateways need their workers to have it.
//
// Threading: the count is read from any thread; the rest runs on the
// worker's intake loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/status.h"
#include "worker/worker.h"

namespace shoal::baselines {

class PushIntake {
 public:
  // Subscribes on `worker`'s intake; the subscription ends with the
  // worker's drain. The returned object only counts.
  static Result<std::unique_ptr<PushIntake>> Attach(worker::Worker* worker);

  // Pushed items queued so far.
  uint64_t items() const { return items_->load(std::memory_order_relaxed); }

 private:
  PushIntake() = default;
  // Shared with the subscription's handler, which may outlive this.
  std::shared_ptr<std::atomic<uint64_t>> items_ = std::make_shared<std::atomic<uint64_t>>(0);
};

}  // namespace shoal::baselines
