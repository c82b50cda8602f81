// SpanExporter: sends finished spans to an OpenTelemetry collector over
// OTLP/HTTP with the JSON encoding (POST <endpoint>, Content-Type
// application/json; otlp_json.h), in batches, from a thread of its own.
//
// A dead, slow or refusing collector never slows serving: Record only
// appends to a bounded queue under a mutex (no I/O, no allocation beyond the
// span's) and drops the span when the queue is full; every export has a
// timeout; a batch the collector refuses for a reason worth retrying (a
// transport failure, 429, 502, 503, 504) is tried twice more with backoff
// (the server's Retry-After when it gives one, at most 30 s), then dropped.
// Whatever is dropped is counted (shoal_trace_spans_total{outcome}) and
// logged once a minute, never per span.
//
// Threading: Record from any thread; Stop (or the destructor) sends what is
// queued, for at most `stop_timeout`, and joins the thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/metrics.h"
#include "trace/otlp_json.h"

namespace shoal::trace {

struct ExporterOptions {
  // Where spans go: the full URL, ".../v1/traces".
  std::string endpoint;
  // Extra request headers ("authorization" to a hosted collector).
  std::vector<std::pair<std::string, std::string>> headers;
  Resource resource;
  size_t max_queue = 2048;                   // spans waiting; past it new ones are dropped
  size_t max_batch = 512;                    // spans per request
  std::chrono::milliseconds interval{1000};  // a partial batch waits at most this
  std::chrono::milliseconds timeout{5000};   // per request, connecting included
  std::chrono::milliseconds stop_timeout{2000};
};

// The OTLP exporter's configuration as OpenTelemetry's environment
// variables give it, for a flag left empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// (used as is), else OTEL_EXPORTER_OTLP_ENDPOINT with "/v1/traces" appended;
// OTEL_EXPORTER_OTLP_HEADERS ("k1=v1,k2=v2", percent-decoded). A
// `flag_endpoint` given is a base URL as OTEL_EXPORTER_OTLP_ENDPOINT is,
// unless it already ends in "/v1/traces". Empty endpoint: tracing is off.
ExporterOptions ExporterOptionsFromEnvironment(std::string flag_endpoint, Resource resource);

class SpanExporter {
 public:
  // `metrics` gets shoal_trace_spans_total{outcome}: exported, dropped
  // (queue full), failed (the collector refused or was unreachable).
  SpanExporter(ExporterOptions options, MetricsRegistry& metrics);
  ~SpanExporter();

  void Record(Span span);
  void Stop();

  const ExporterOptions& options() const { return options_; }
  // Stop's time is up: the request in flight is cut, the rest dropped.
  bool Aborted() const;

 private:
  void Run();
  // One POST; returns whether the spans are delivered, and when it may be
  // retried (zero: it may not).
  bool Export(const std::vector<Span>& batch, std::chrono::milliseconds* retry_after);
  // A line a minute at most while spans are lost; `now`: at once.
  void LogLosses(bool now = false);

  const ExporterOptions options_;
  Counter* exported_;
  Counter* dropped_;
  Counter* failed_;
  void* curl_ = nullptr;  // CURL*, the export thread's

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Span> queue_;                       // guarded by mu_
  bool stopping_ = false;                        // guarded by mu_
  std::atomic<int64_t> abort_at_ns_{INT64_MAX};  // steady clock; set by Stop

  // The export thread's.
  std::string last_error_;
  std::chrono::milliseconds backoff_{0};
  double logged_losses_ = 0;
  SteadyClock::time_point next_loss_log_{};
  std::thread thread_;
};

}  // namespace shoal::trace
