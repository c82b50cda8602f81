// QueueGauges: what an autoscaler needs, as Prometheus gauges on a gateway's
// GET /metrics — the work waiting in JetStream per pool and per model (and
// priority class), how old its oldest item is, and the capacity the pool's
// workers have and use:
//
//   shoal_queue_items{pool,model,priority}   the model's messages in its
//       pool's work stream: waiting plus being worked on (WorkQueue
//       retention keeps a message until its ack) — the lag KEDA's
//       nats-jetstream scaler reads for that consumer (num_pending +
//       num_ack_pending)
//   shoal_queue_oldest_item_age_seconds{pool,model}   since the oldest of
//       them was queued (0: none)
//   shoal_pool_queue_items{pool}   the pool's whole backlog
//   shoal_pool_workers{pool}, shoal_pool_executors{pool}   live workers and
//       the batches they may run at once
//   shoal_pool_busy_items{pool}   items the workers hold (queued locally
//       or in running batches)
//   shoal_pool_memory_{used,budget}_bytes{pool}
//
// A model no worker serves answers 503 NO_CAPACITY with Retry-After (its
// requests are not queued: capacity_wait.h), so scaling a pool up from zero
// reads the gateways' shoal_gateway_errors_total{code="NO_CAPACITY"}; the
// gauges above then scale it further.
//
// Threading: sampled every `period` on a thread of its own (stream info and
// message lookups are blocking requests, never on a lane); Text() from any
// thread returns the last sample.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/event_loop.h"
#include "queue/catalog_watch.h"
#include "queue/nats.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

struct QueueGaugeSources {
  std::function<std::shared_ptr<const queue::CatalogSnapshot>()> catalog;
  queue::WorkerRegistry* workers;  // not owned
  natsConnection* nc;              // not owned: the stream lookups
  jsCtx* js;                       // not owned
};

class QueueGauges {
 public:
  QueueGauges(QueueGaugeSources sources,
              std::chrono::milliseconds period = std::chrono::milliseconds(2000));
  ~QueueGauges();  // Stop()

  void Start();  // samples at once, then every period
  void Stop();   // idempotent

  // The Prometheus text of the last sample ("" before the first).
  std::string Text() const;

 private:
  void Sample();  // on loop_

  QueueGaugeSources sources_;
  std::chrono::milliseconds period_;
  EventLoop loop_;
  bool started_ = false;
  mutable std::mutex mu_;
  std::string text_;  // guarded by mu_
};

// When the oldest message on `subject` in `stream` was stored (Unix ms);
// NOT_FOUND when there is none. One STREAM.MSG.GET request ("next_by_subj").
Result<int64_t> OldestMessageUnixMs(natsConnection* nc, const std::string& stream,
                                    const std::string& subject);

}  // namespace shoal::gateway
