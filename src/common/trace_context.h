// W3C Trace Context (https://www.w3.org/TR/trace-context/): the
// `traceparent` header a request carries in, and the one Shoal passes on to
// its workers in the work message ("trace", wire/work_message.h).
//
//   traceparent: 00-<trace-id: 32 hex>-<parent-id: 16 hex>-<flags: 2 hex>
//
// Lowercase hex only; an all-zero trace or parent id is invalid; version ff
// is invalid; a later version is read by its first four fields (the spec's
// forward compatibility). An invalid header is ignored: the request starts
// a new trace, as the spec says.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shoal {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

struct TraceContext {
  TraceId trace_id{};
  SpanId span_id{};   // the span this context is the parent for
  uint8_t flags = 0;  // bit 0: sampled

  bool sampled() const { return (flags & 1) != 0; }
  // Both ids set: a context to record spans under.
  bool valid() const;
};

std::optional<TraceContext> ParseTraceparent(std::string_view header);
std::string FormatTraceparent(const TraceContext& c);

// Random ids (never all zero), from a per-thread generator seeded by the OS.
TraceId NewTraceId();
SpanId NewSpanId();

std::string TraceIdHex(const TraceId& id);
std::string SpanIdHex(const SpanId& id);

}  // namespace shoal
