// A finished span as Shoal records it: what the OTLP exporter
// (span_exporter.h) sends, field for field as OTLP's Span message has them
// (opentelemetry/proto/trace/v1/trace.proto).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/trace_context.h"

namespace shoal::trace {

// OTLP's SpanKind numbers.
enum class SpanKind : int { kInternal = 1, kServer = 2, kClient = 3, kProducer = 4, kConsumer = 5 };

struct SpanAttribute {
  using Value = std::variant<std::string, int64_t, double, bool>;
  std::string_view key;  // a string literal (static storage): keys are fixed names
  Value value;
};

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  // all zero: a root span
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
  std::vector<SpanAttribute> attributes;
  // OTLP status: ERROR with this message when set, else UNSET (instrumentation
  // leaves OK to the application, as the specification asks).
  bool error = false;
  std::string status_message;
};

// A new span under `parent` (its trace, its span as the parent).
inline Span ChildSpan(const TraceContext& parent, std::string name, SpanKind kind,
                      int64_t start_unix_ns, int64_t end_unix_ns) {
  Span s;
  s.trace_id = parent.trace_id;
  s.span_id = NewSpanId();
  s.parent_span_id = parent.span_id;
  s.name = std::move(name);
  s.kind = kind;
  s.start_unix_ns = start_unix_ns;
  s.end_unix_ns = std::max(end_unix_ns, start_unix_ns);
  return s;
}

inline int64_t UnixNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The Unix time of a steady-clock instant of this process.
inline int64_t UnixNanosAt(SteadyClock::time_point t) {
  return UnixNanos() -
         std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t).count();
}

}  // namespace shoal::trace
