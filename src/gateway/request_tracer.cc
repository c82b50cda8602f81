#include "gateway/request_tracer.h"

#include <random>

#include "gateway/gateway_metrics.h"

namespace shoal::gateway {
namespace {

bool SampleRoot(double ratio) {
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, 1)(rng) < ratio;
}

// A stage of `p` from `start` to `end`, when both happened.
void Stage(trace::SpanExporter& out, const PendingRequest& p, const char* name,
           SteadyClock::time_point start, SteadyClock::time_point end) {
  if (start == SteadyClock::time_point{} || end == SteadyClock::time_point{} || end < start) return;
  trace::Span s = trace::ChildSpan(p.trace, name, trace::SpanKind::kInternal,
                                   trace::UnixNanosAt(start), trace::UnixNanosAt(end));
  s.attributes.push_back({"shoal.request_id", p.id});
  out.Record(std::move(s));
}

}  // namespace

std::optional<trace::Span> RequestTracer::Begin(http::Request* req) const {
  const std::optional<TraceContext> incoming = ParseTraceparent(req->traceparent);
  if (incoming ? !incoming->sampled() : !SampleRoot(sample_ratio_)) return std::nullopt;
  trace::Span span;
  span.trace_id = incoming ? incoming->trace_id : NewTraceId();
  span.span_id = NewSpanId();
  if (incoming) span.parent_span_id = incoming->span_id;
  const std::string_view route = GatewayMetrics::RouteLabel(req->path);
  span.name = req->method + " " + std::string(route);
  span.kind = trace::SpanKind::kServer;
  span.start_unix_ns = trace::UnixNanosAt(req->received);
  span.attributes = {{"http.request.method", req->method},
                     {"url.path", req->path},
                     {"http.route", std::string(route)}};
  req->trace = {.trace_id = span.trace_id,
                .span_id = span.span_id,
                .flags = incoming ? incoming->flags : uint8_t{1}};
  return span;
}

void RequestTracer::Answered(trace::Span& span, http::Response* head) {
  span.attributes.push_back({"http.response.status_code", int64_t{head->status}});
  for (const auto& [name, value] : head->headers) {
    if (name == "X-Shoal-Request-Id") span.attributes.push_back({"shoal.request_id", value});
  }
  if (!head->error_code.empty())
    span.attributes.push_back({"error.type", std::string(head->error_code)});
  // A server span is an error for a 5xx only: a 4xx is the client's.
  if (head->status >= 500) {
    span.error = true;
    span.status_message = std::string(head->error_code);
  }
  head->headers.emplace_back("X-Shoal-Trace-Id", TraceIdHex(span.trace_id));
}

void RequestTracer::End(trace::Span span) const {
  span.end_unix_ns = std::max(trace::UnixNanos(), span.start_unix_ns);
  exporter_->Record(std::move(span));
}

void RequestTracer::RecordStages(const PendingRequest& p) const {
  if (!p.trace.valid()) return;
  trace::SpanExporter& out = *exporter_;
  Stage(out, p, "admission", p.received, p.submitted_at);
  Stage(out, p, "payload upload", p.submitted_at, p.offloaded_at);
  Stage(out, p, "capacity wait", p.waited_from, p.published_at);
  Stage(out, p, "result", p.results_in_at, SteadyClock::now());
}

}  // namespace shoal::gateway
