#include "worker/item_spans.h"

namespace shoal::worker {
namespace {

// The item's span under its request's, with what names it; false
// when its traceparent does not parse (a worker trusts nothing on the queue).
bool StartSpan(const WorkItem& item, const char* name, trace::SpanKind kind, int64_t start_ns,
               int64_t end_ns, const std::string& worker_id, trace::Span* out) {
  const std::optional<TraceContext> parent = ParseTraceparent(item.work.trace);
  if (!parent || !parent->sampled()) return false;
  *out = trace::ChildSpan(*parent, name, kind, start_ns, end_ns);
  out->attributes = {{"shoal.request_id", std::string(item.work.request_id)},
                     {"shoal.item", int64_t{item.work.item}},
                     {"shoal.worker", worker_id},
                     {"shoal.attempt", static_cast<int64_t>(item.delivered)}};
  if (item.model && item.model->spec)
    out->attributes.push_back({"shoal.model", item.model->spec->id});
  return true;
}

}  // namespace

void ItemSpans::Queue(const WorkItem& item, int64_t start_unix_us) const {
  trace::Span s;
  if (!StartSpan(item, "queue", trace::SpanKind::kConsumer, item.enqueued_us * 1000,
                 start_unix_us * 1000, worker_id_, &s)) {
    return;
  }
  s.attributes.push_back({"messaging.system", std::string("nats")});
  s.attributes.push_back({"shoal.priority", std::string(queue::PriorityName(item.priority))});
  exporter_->Record(std::move(s));
}

void ItemSpans::Stage(const WorkItem& item, const char* name, SteadyClock::time_point start,
                      SteadyClock::time_point end, size_t batch_items, const Status& error) const {
  trace::Span s;
  if (!StartSpan(item, name, trace::SpanKind::kInternal, trace::UnixNanosAt(start),
                 trace::UnixNanosAt(end), worker_id_, &s)) {
    return;
  }
  if (batch_items > 0)
    s.attributes.push_back({"shoal.batch_items", static_cast<int64_t>(batch_items)});
  if (!error.ok()) {
    s.error = true;
    s.status_message = error.ToString();
  }
  exporter_->Record(std::move(s));
}

void ItemSpans::Generation(const WorkItem& item, int64_t started_unix_us,
                           SteadyClock::time_point started, SteadyClock::time_point first_token,
                           SteadyClock::time_point last_token, size_t generated) const {
  Queue(item, started_unix_us);
  if (generated == 0) return;
  Stage(item, "prefill", started, first_token);
  Stage(item, "decode", first_token, last_token);
}

}  // namespace shoal::worker
