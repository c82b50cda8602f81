// DeadLetters: what happens to a work item that JetStream gave up on.
//
// A message delivered MaxDeliver times without an ack (its workers kept
// crashing on it, or kept dying) is not redelivered; nats-server publishes a
// MAX_DELIVERIES advisory instead. One gateway of the cluster (a queue group
// shares the advisories) then
//   1. copies the work message as it was (its header names the request, the
//      item and the task: wire/work_message.h) to the SHOAL_DLQ stream
//      (subject shoal.dlq.<pool>.<model-token>) for inspection,
//   2. answers the waiting client with 500 INFERENCE_ERROR — an error, not
//      silence or a timeout —
//   3. deletes it from the work stream (WorkQueue streams keep unacked
//      messages).
//
// Threading: advisories arrive on the subscription's cnats delivery thread.
#pragma once

#include <string>

#include "common/status.h"
#include "queue/nats.h"

namespace shoal::gateway {

class DeadLetters {
 public:
  // `replicas`: of SHOAL_DLQ, as StreamLimits::replicas (queue/topology.h).
  DeadLetters(natsConnection* nc, jsCtx* js, int replicas = 0) : nc_(nc), js_(js), replicas_(replicas) {}
  ~DeadLetters();

  Status Start();

 private:
  static void OnAdvisory(natsConnection*, natsSubscription*, natsMsg* msg, void* closure);
  void Handle(std::string_view advisory_json);

  natsConnection* nc_;
  jsCtx* js_;
  int replicas_;
  queue::SubscriptionPtr sub_;
};

}  // namespace shoal::gateway
