#include "worker/work_item.h"

#include "common/numbers.h"
#include "wire/work_message.h"

namespace shoal::worker {
namespace {

// The headers pulled and pushed work messages share.
void ParseHeaders(natsMsg* m, WorkItem* out) {
  using queue::Header;
  out->payload = queue::Payload(m);
  out->request_id = Header(m, wire::kHeaderRequestId);
  out->reply = Header(m, wire::kHeaderReply);
  out->task = Header(m, wire::kHeaderTask);
  out->lora = Header(m, wire::kHeaderLora);
  uint64_t v = 0;
  if (ParseU64(Header(m, wire::kHeaderItem), &v)) out->index = static_cast<uint32_t>(v);
  if (ParseU64(Header(m, wire::kHeaderCost), &v)) out->cost = static_cast<uint32_t>(std::max<uint64_t>(v, 1));
  if (ParseU64(Header(m, wire::kHeaderDeadline), &v)) out->deadline_ms = static_cast<int64_t>(v);
  out->truncate = Header(m, wire::kHeaderTruncate) == "1";
  out->normalize = Header(m, wire::kHeaderNormalize) != "0";
  out->payload_key = Header(m, wire::kHeaderPayload);
}

}  // namespace

Status ParseWorkItem(queue::MsgPtr msg, std::shared_ptr<ServedModel> model,
                     const queue::PullSubscriber::Delivery& delivery, WorkItem* out) {
  natsMsg* m = msg.get();
  ParseHeaders(m, out);
  out->source = ItemSource::kPulled;
  const char* ack = natsMsg_GetReply(m);
  out->ack = ack ? ack : "";
  out->delivered = delivery.delivered;
  out->enqueued_us = delivery.stored_unix_ns / 1000;
  out->received = out->last_progress = SteadyClock::now();
  out->model = std::move(model);
  out->msg = std::move(msg);
  if (out->reply.empty() || out->ack.empty()) {
    return InvalidInput("work message without Shoal-Reply or ack subject");
  }
  return Status::Ok();
}

Status ParsePushedItem(queue::MsgPtr msg, std::shared_ptr<ServedModel> model, WorkItem* out) {
  ParseHeaders(msg.get(), out);
  out->source = ItemSource::kPushed;
  out->ack = {};
  out->delivered = 1;
  out->enqueued_us = UnixMicros();
  out->received = out->last_progress = SteadyClock::now();
  out->model = std::move(model);
  out->msg = std::move(msg);
  if (out->reply.empty()) return InvalidInput("pushed work message without Shoal-Reply");
  return Status::Ok();
}

}  // namespace shoal::worker
