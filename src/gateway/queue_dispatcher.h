// QueueDispatcher: one per gateway lane. Puts a request's items on JetStream
// and collects their results, over its own NATS connection driven by the
// lane's loop (a LaneChannel, lane_channel.h) — so a request is parsed,
// published, answered and written back on one thread.
//
//   Submit ──▶ (no live worker pulls for the model? wait up to
//              no_capacity_wait, then 503 NO_CAPACITY — nothing is queued
//              that nobody can run)
//          ──▶ one publish per item to shoal.work.<pool>.<model-token>,
//              reply <inbox>.ack for JetStream's publish acknowledgement
//   _INBOX.<lane-id>.> ──▶ results by item index; publish-ack errors
//              (stream full → 503 OVERLOADED; no stream → 503 NO_CAPACITY)
//
// A second result for a filled slot (a redelivery after a worker died
// between publishing and acking) is ignored.
//
// Threading: everything but Start and MaxPayload runs on the lane's loop
// thread; Start makes the subscription there.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "gateway/dispatcher.h"
#include "gateway/lane_channel.h"
#include "queue/nats.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

struct QueueDispatcherOptions {
  std::chrono::milliseconds no_capacity_wait{2000};
};

class QueueDispatcher final : public Dispatcher {
 public:
  QueueDispatcher(EventLoop* loop, std::string lane_id, const queue::WorkerRegistry* workers,
                  PendingTable* table, QueueDispatcherOptions options = {});
  ~QueueDispatcher() override;

  // Connects (from any thread) and subscribes the lane's inbox.
  Status Start(const queue::ConnectOptions& nats);
  // Largest item the connection's server accepts.
  int64_t MaxPayload() const;

  void Submit(const std::shared_ptr<PendingRequest>& p) override;
  void Cancel(const PendingRequest& p) override;
  void Tick(SteadyClock::time_point now) override;
  bool HasCapacity(std::string_view model_id) const override;
  void Stop() override;

 private:
  struct Waiting {
    std::shared_ptr<PendingRequest> request;
    SteadyClock::time_point give_up;
  };

  void Publish(PendingRequest& p);
  void OnPublishAck(PendingRequest& p, natsMsg* msg);

  const queue::WorkerRegistry* workers_;
  PendingTable* table_;
  const QueueDispatcherOptions options_;
  LaneChannel channel_;  // connection, publishes, result inbox
  std::vector<Waiting> waiting_;  // requests waiting for a worker to appear
};

}  // namespace shoal::gateway
