#include "trace/otlp_json.h"

#include <algorithm>

#include "wire/json_writer.h"

namespace shoal::trace {
namespace {

void WriteValue(wire::JsonWriter& w, const SpanAttribute::Value& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          w.Raw("{\"stringValue\":");
          w.String(x);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          w.Raw("{\"intValue\":\"");  // an int64: a decimal string
          w.Int(x);
          w.Char('"');
        } else if constexpr (std::is_same_v<T, double>) {
          w.Raw("{\"doubleValue\":");
          w.Double(x);
        } else {
          w.Raw("{\"boolValue\":");
          w.Bool(x);
        }
      },
      v);
  w.Char('}');
}

void WriteAttributes(wire::JsonWriter& w, const std::vector<SpanAttribute>& attributes) {
  w.Raw("\"attributes\":[");
  for (size_t i = 0; i < attributes.size(); ++i) {
    if (i) w.Char(',');
    w.Raw("{\"key\":");
    w.String(attributes[i].key);
    w.Raw(",\"value\":");
    WriteValue(w, attributes[i].value);
    w.Char('}');
  }
  w.Char(']');
}

void WriteId(wire::JsonWriter& w, const char* key, const std::string& hex) {
  w.Char('"');
  w.Raw(key);
  w.Raw("\":\"");
  w.Raw(hex);  // lowercase hex: nothing to escape
  w.Char('"');
}

bool IsRoot(const SpanId& parent) {
  return std::all_of(parent.begin(), parent.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

std::string EncodeOtlpJson(const Resource& resource, std::span<const Span> spans) {
  std::string out;
  out.reserve(512 + 400 * spans.size());
  wire::JsonWriter w(&out);
  std::vector<SpanAttribute> resource_attributes = {{"service.name", resource.service_name}};
  if (!resource.service_instance_id.empty()) {
    resource_attributes.push_back({"service.instance.id", resource.service_instance_id});
  }
  w.Raw("{\"resourceSpans\":[{\"resource\":{");
  WriteAttributes(w, resource_attributes);
  w.Raw("},\"scopeSpans\":[{\"scope\":{\"name\":\"shoal\"},\"spans\":[");
  for (size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    if (i) w.Char(',');
    w.Char('{');
    WriteId(w, "traceId", TraceIdHex(s.trace_id));
    w.Char(',');
    WriteId(w, "spanId", SpanIdHex(s.span_id));
    if (!IsRoot(s.parent_span_id)) {
      w.Char(',');
      WriteId(w, "parentSpanId", SpanIdHex(s.parent_span_id));
    }
    w.Raw(",\"name\":");
    w.String(s.name);
    w.Raw(",\"kind\":");
    w.Int(static_cast<int>(s.kind));
    w.Raw(",\"startTimeUnixNano\":\"");  // fixed64: decimal strings
    w.Int(s.start_unix_ns);
    w.Raw("\",\"endTimeUnixNano\":\"");
    w.Int(s.end_unix_ns);
    w.Raw("\",");
    WriteAttributes(w, s.attributes);
    if (s.error) {
      w.Raw(",\"status\":{\"code\":2,\"message\":");  // STATUS_CODE_ERROR
      w.String(s.status_message);
      w.Char('}');
    }
    w.Char('}');
  }
  w.Raw("]}]}]}");
  return out;
}

}  // namespace shoal::trace
