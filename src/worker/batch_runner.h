// BatchRunner: runs one batch end to end — drops what expired or was
// cancelled (its client hung up: cancelled_requests.h), decodes the
// items, runs the model (one call per task the batch holds: encode, score,
// tokenize), publishes each result to its reply subject, and
// settles each message with JetStream per ack_policy.h.
//
// An item under a LoRA adapter (WorkItem::lora) runs only when the loaded
// model has that adapter (ServedModel::loras); until then it goes back to
// the stream for a moment, and then fails MODEL_NOT_FOUND (ack_policy.h).
// An adapter the model has but has not read from disk yet is loaded in the
// background while its items wait in the stream (Model::LoraReady), so a
// first use never holds up a batch of other requests.
// Adapters of one model share its batches: each input names its own.
//
// An offloaded item (WorkItem::payload_key) is fetched from the payload
// store first; a result larger than a NATS message goes out in parts
// (wire/work_message.h).
//
// Pushed items (WorkItem::source, the push baseline) have no ack subject:
// acks and +WPI are skipped, and where a pulled item would be naked back to
// the queue (not served here, shutting down) a pushed one is answered
// NO_CAPACITY, since nothing would redeliver it. Hedged items (second copies
// of stored ones) skip acks too, but are dropped where a pulled item would be
// naked: the stream's copy runs.
//
// Results and acks go out on the worker's loop connection (queue/
// loop_connection.h): the executor only buffers them, and the intake loop
// writes a whole batch's results and acks in one write — a write per message
// had been the largest part of a worker's CPU.
//
// Threading: Run is called by executor threads, several at once; it holds no
// state of its own beyond the connection (thread-safe in cnats).
#pragma once

#include <string>
#include <vector>

#include "queue/nats.h"
#include "queue/payload_store.h"
#include "worker/ack_policy.h"
#include "worker/cancelled_requests.h"
#include "worker/item_spans.h"
#include "worker/work_item.h"

namespace shoal::worker {

struct TaskGroup;

class BatchRunner {
 public:
  // `cancelled` and `payloads` (optional) outlive the runner.
  // `spans` (optional) records traced items' stages (item_spans.h).
  BatchRunner(natsConnection* nc, queue::MsgReaper* reaper, std::string worker_id,
              const CancelledRequests* cancelled = nullptr, queue::PayloadStore* payloads = nullptr,
              const ItemSpans* spans = nullptr)
      : nc_(nc),
        reaper_(reaper),
        worker_id_(std::move(worker_id)),
        cancelled_(cancelled),
        payloads_(payloads),
        spans_(spans) {}

  // Null when this worker exports no traces.
  const ItemSpans* spans() const { return spans_; }

  void Run(std::vector<WorkItem>& batch);

  // Hands the batch's messages to the reaper (once nobody reads them).
  void Release(std::vector<WorkItem>& batch) {
    for (WorkItem& it : batch) reaper_->Add(it.msg.release());
  }

  // Replies (when the policy says so) and acks one item.
  void Settle(const WorkItem& item, Outcome outcome, const Status& error = Status::Ok());

  // Acks an item whose result went out already (a generation's last chunk).
  void Complete(const WorkItem& item);

  // Tells JetStream the item is still being worked on (+WPI).
  void Progress(const WorkItem& item);

  // Whether the loaded model has the item's adapter (or it names none);
  // when not, settles it (see above) and returns false.
  bool CheckLora(const ServedModel& served, const WorkItem& item);

  // Fetches an offloaded item's bytes from the payload store (false:
  // settled instead). Batches fetch here; the generation engine and the
  // stream relay fetch a generation's work (its images may be large).
  bool Fetch(WorkItem& item);

 private:
  template <class Out>
  void RunGroup(ServedModel& served, const TaskGroup& group, int64_t start_wall_us);
  // Batch count, size, cost and fill (worker_metrics.h).
  void RecordBatch(const ServedModel& served, const std::vector<WorkItem>& batch);
  // The most result bytes one message carries.
  size_t PartBytes() const;
  // A result reply's header as far as the item says (the caller adds what
  // the output says).
  wire::ReplyHeader ResultHeader(const WorkItem& item) const;
  // Publishes `reply` (a header of `header_bytes`, then the result) to the
  // item's reply subject; a result over one message goes in parts.
  void PublishResult(const WorkItem& item, wire::ReplyHeader h, std::string_view reply, size_t header_bytes);
  void PublishError(const WorkItem& item, const Status& error);
  void Publish(const WorkItem& item, const std::string& subject, std::string_view message);
  void Ack(const WorkItem& item, AckAction action, std::chrono::milliseconds delay);

  natsConnection* nc_;
  queue::MsgReaper* reaper_;  // messages are freed in batches (see nats.h)
  const std::string worker_id_;
  const CancelledRequests* cancelled_;
  queue::PayloadStore* payloads_;
  const ItemSpans* spans_;
};

}  // namespace shoal::worker
