// BatchRunner: runs one batch end to end — drops what expired, decodes the
// items, runs the model, publishes each result to its reply subject, and
// settles each message with JetStream per ack_policy.h.
//
// Threading: Run is called by executor threads, several at once; it holds no
// state of its own beyond the connection (thread-safe in cnats).
#pragma once

#include <string>
#include <vector>

#include "queue/nats.h"
#include "worker/ack_policy.h"
#include "worker/work_item.h"

namespace shoal::worker {

class BatchRunner {
 public:
  BatchRunner(natsConnection* nc, std::string worker_id)
      : nc_(nc), worker_id_(std::move(worker_id)) {}

  void Run(std::vector<WorkItem>& batch);

  // Replies (when the policy says so) and acks one item.
  void Settle(const WorkItem& item, Outcome outcome, const Status& error = Status::Ok());

  // Tells JetStream the item is still being worked on (+WPI).
  void Progress(const WorkItem& item);

 private:
  void PublishResult(const WorkItem& item, std::string_view payload, uint32_t tokens,
                     int64_t queue_us, int64_t inference_us);
  void PublishError(const WorkItem& item, const Status& error);
  void Ack(const WorkItem& item, AckAction action, std::chrono::milliseconds delay);

  natsConnection* nc_;
  const std::string worker_id_;
};

}  // namespace shoal::worker
