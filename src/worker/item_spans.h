// ItemSpans: the spans a worker records for a traced item — one whose work
// message carries a traceparent ("trace", wire/work_message.h) — as
// children of the gateway's span for its request (gateway/request_tracer.h):
//
//   queue          CONSUMER: JetStream stored it → its batch started here
//   payload fetch  an offloaded item's bytes read from the payload store
//   tokenize       its batch's tokenizing (the model call's first part)
//   inference      the rest of its batch's model call
//   result         its result encoded and handed to the connection
//   prefill, decode  a generation's, instead of tokenize and inference (in
//                    the native engine, or relayed to a runtime that
//                    batches itself: llama.cpp, upstream)
//
// A batch's stages are shared by its items: each traced item gets its own
// copy, with the batch's size as an attribute. An item that is not traced
// costs one empty-string check.
//
// Threading: const; called from executor and engine threads at once.
#pragma once

#include <string>

#include "common/status.h"
#include "trace/span_exporter.h"
#include "worker/work_item.h"

namespace shoal::worker {

class ItemSpans {
 public:
  // `exporter` outlives this.
  ItemSpans(trace::SpanExporter* exporter, std::string worker_id)
      : exporter_(exporter), worker_id_(std::move(worker_id)) {}

  static bool Traced(const WorkItem& item) { return !item.work.trace.empty(); }

  // From JetStream's stamp to `start_unix_us`.
  void Queue(const WorkItem& item, int64_t start_unix_us) const;
  // A stage from `start` to `end` of this process's steady clock; `error`
  // marks it failed. `batch_items`: 0 for a stage of the item alone.
  void Stage(const WorkItem& item, const char* name, SteadyClock::time_point start,
             SteadyClock::time_point end, size_t batch_items = 0,
             const Status& error = Status::Ok()) const;
  // A finished generation's queue, prefill (start to first token) and
  // decode (first to last token): the native engine's and the relay's.
  void Generation(const WorkItem& item, int64_t started_unix_us, SteadyClock::time_point started,
                  SteadyClock::time_point first_token, SteadyClock::time_point last_token,
                  size_t generated) const;

 private:
  trace::SpanExporter* const exporter_;
  const std::string worker_id_;
};

}  // namespace shoal::worker
