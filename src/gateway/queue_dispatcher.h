// QueueDispatcher: puts a request's items on JetStream and collects their
// results from core NATS.
//
//   Submit ──▶ (no live worker pulls for the model? wait up to
//              no_capacity_wait, then 503 NO_CAPACITY — nothing is queued
//              that nobody can run)
//          ──▶ one publish per item to shoal.work.<pool>.<model-token>,
//              reply <inbox>.ack for JetStream's publish acknowledgement
//   _INBOX.<gateway-id>.> ──▶ results by item index; publish-ack errors
//              (stream full → 503 OVERLOADED; no stream → 503 NO_CAPACITY)
//
// A second result for a filled slot (a redelivery after a worker died
// between publishing and acking) is ignored.
//
// Threading: Submit runs on I/O threads, Tick on the sweeper, replies on the
// subscription's delivery thread. `waiting_mu_` guards the capacity waiters.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "gateway/dispatcher.h"
#include "queue/nats.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

struct QueueDispatcherOptions {
  std::chrono::milliseconds no_capacity_wait{2000};
};

class QueueDispatcher final : public Dispatcher {
 public:
  QueueDispatcher(natsConnection* nc, std::string gateway_id, const queue::WorkerRegistry* workers,
                  PendingTable* table, QueueDispatcherOptions options = {});
  ~QueueDispatcher() override;

  Status Start();
  void Stop() override;

  void Submit(const std::shared_ptr<PendingRequest>& p) override;
  void Tick(SteadyClock::time_point now) override;
  bool HasCapacity(std::string_view model_id) const override;

 private:
  struct Waiting {
    std::shared_ptr<PendingRequest> request;
    SteadyClock::time_point give_up;
  };

  void Publish(PendingRequest& p);
  static void OnReplyThunk(natsConnection*, natsSubscription*, natsMsg* msg, void* closure);
  void OnReply(natsMsg* msg);
  void OnPublishAck(PendingRequest& p, natsMsg* msg);
  void OnResult(PendingRequest& p, natsMsg* msg);

  natsConnection* nc_;
  const std::string gateway_id_;
  const std::string reply_prefix_;  // "_INBOX.<gateway-id>."
  const queue::WorkerRegistry* workers_;
  PendingTable* table_;
  const QueueDispatcherOptions options_;
  queue::SubscriptionPtr sub_;

  std::mutex waiting_mu_;
  std::vector<Waiting> waiting_;  // guarded by waiting_mu_
};

}  // namespace shoal::gateway
