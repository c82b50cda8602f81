#include "worker/work_item.h"

namespace shoal::worker {

Status ParseWorkItem(queue::Message msg, std::shared_ptr<ServedModel> model,
                     const queue::PullSubscriber::Delivery& delivery, WorkItem* out) {
  out->msg = std::move(msg);
  out->source = ItemSource::kPulled;
  out->ack = out->msg.reply();
  out->delivered = delivery.delivered;
  out->enqueued_us = delivery.stored_unix_ns / 1000;
  out->received = out->last_progress = SteadyClock::now();
  out->model = std::move(model);
  if (out->ack.empty()) return InvalidInput("work message without an ack subject");
  return wire::ReadWork(out->msg.payload(), &out->work, &out->payload);
}

Status ParsePushedItem(queue::Message msg, std::shared_ptr<ServedModel> model, WorkItem* out,
                       ItemSource source) {
  out->msg = std::move(msg);
  out->source = source;
  out->ack = {};
  out->delivered = 1;
  out->enqueued_us = UnixMicros();
  out->received = out->last_progress = SteadyClock::now();
  out->model = std::move(model);
  return wire::ReadWork(out->msg.payload(), &out->work, &out->payload);
}

}  // namespace shoal::worker
