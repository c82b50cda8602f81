// RequestTracer: the gateway's spans of a traced request (docs/operations.md
// "Traces"). A request is traced when its `traceparent` says it is sampled,
// or, without one, with probability `sample_ratio` (parent-based sampling, as
// OpenTelemetry's default sampler). Its spans:
//
//   "<METHOD> <route>"  SERVER: arrival to the response's last byte handed
//                       over; the parent of all the others, the worker's too
//   admission           arrival to the dispatcher: parsing, key scope, rate
//                       limits
//   payload upload      items to the payload store (offloaded ones only)
//   capacity wait       waiting for a worker to serve the model (if it did)
//   result              the last result in to the response composed
//
// The worker records queue, payload fetch, tokenize, inference and result
// under the same parent (worker/item_spans.h).
//
// Threading: const after construction; called from the lanes.
#pragma once

#include <optional>

#include "gateway/pending.h"
#include "http/http.h"
#include "trace/span_exporter.h"

namespace shoal::gateway {

class RequestTracer {
 public:
  // `exporter` outlives this.
  RequestTracer(trace::SpanExporter* exporter, double sample_ratio)
      : exporter_(exporter), sample_ratio_(sample_ratio) {}

  // Whether `req` is traced: if so, sets req->trace and returns its SERVER
  // span, to be finished by Answered and End.
  std::optional<trace::Span> Begin(http::Request* req) const;
  // The response's head is going out: what it says goes on the span, and
  // the trace id on the head (X-Shoal-Trace-Id).
  static void Answered(trace::Span& span, http::Response* head);
  // The response's last part went out.
  void End(trace::Span span) const;
  // The stages of a request the router took, when it finished.
  void RecordStages(const PendingRequest& p) const;

 private:
  trace::SpanExporter* const exporter_;
  const double sample_ratio_;
};

}  // namespace shoal::gateway
