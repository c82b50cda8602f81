// InFlightProbe: which work items one worker holds right now, read off the
// NATS traffic itself — for tests that must kill a worker while it provably
// holds work (a heartbeat's backlog is up to a second old; this is not).
//
// It listens, on a connection of its own, to
//   _SHOAL.pull.<worker-id>.>  what JetStream delivers to the worker's pull
//                              requests (each with its $JS.ACK reply subject
//                              and the item's Shoal-Reply / Shoal-Item),
//   $JS.ACK.>                  every ack, nak and term (+WPI is not one),
//   _INBOX.>                   every result, keyed by reply subject and item.
// An item is held when it was delivered to the worker and neither settled
// by it nor answered by anyone. Freeze the worker (SIGSTOP), let what it
// already sent arrive, and Held() > 0 means a kill now leaves items that
// only a redelivery can answer.
//
// Threading: cnats delivers on its own threads; `mu_` guards the sets.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <map>
#include <string>

#include "common/status.h"
#include "queue/nats.h"

namespace shoal::testing {

class InFlightProbe {
 public:
  // `worker_id` is the worker's --id (a single subject token).
  static Result<std::unique_ptr<InFlightProbe>> Start(const std::string& nats_url, const std::string& worker_id);
  ~InFlightProbe();

  // Items delivered to the worker, unsettled by it and unanswered.
  size_t Held();
  // Items delivered to the worker so far.
  size_t Delivered();

 private:
  InFlightProbe() = default;
  static void OnDelivery(natsConnection*, natsSubscription*, natsMsg* msg, void* self);
  static void OnAck(natsConnection*, natsSubscription*, natsMsg* msg, void* self);
  static void OnResult(natsConnection*, natsSubscription*, natsMsg* msg, void* self);

  std::mutex mu_;
  std::map<std::string, std::string> held_;  // ack subject -> "<reply>#<item>"; guarded by mu_
  std::set<std::string> answered_;           // "<reply>#<item>"; guarded by mu_
  size_t delivered_ = 0;                     // guarded by mu_
  queue::ConnectionPtr nc_;
  queue::SubscriptionPtr deliveries_, acks_, results_;
};

}  // namespace shoal::testing
