// The OTLP/HTTP JSON body of an export: an ExportTraceServiceRequest
// (opentelemetry/proto/collector/trace/v1/trace_service.proto) in the JSON
// mapping OTLP specifies — lowerCamelCase field names, trace and span ids as
// hex strings (not base64), 64-bit integers (times, intValue) as decimal
// strings, enums (kind, status code) as numbers.
//
//   {"resourceSpans": [{"resource": {"attributes": [...]},
//     "scopeSpans": [{"scope": {"name": "shoal"}, "spans": [
//       {"traceId", "spanId", "parentSpanId" (absent for a root), "name",
//        "kind", "startTimeUnixNano", "endTimeUnixNano", "attributes",
//        "status": {"code": 2, "message"} (absent when unset)}]}]}]}
//
// An attribute is {"key", "value": {"stringValue" | "intValue" |
// "doubleValue" | "boolValue"}}. Written straight into one string
// (wire/json_writer.h: text that is not UTF-8 goes with U+FFFD in place of
// each bad byte), not through a document tree: at every request traced, the
// encoding is most of what a span costs.
#pragma once

#include <span>
#include <string>

#include "trace/span.h"

namespace shoal::trace {

// Who sent the spans: the resource's attributes.
struct Resource {
  std::string service_name;         // service.name: "shoal-gateway", "shoal-worker"
  std::string service_instance_id;  // service.instance.id: the gateway's or worker's id
};

std::string EncodeOtlpJson(const Resource& resource, std::span<const Span> spans);

}  // namespace shoal::trace
