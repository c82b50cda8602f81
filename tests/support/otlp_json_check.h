// Checks an OTLP/HTTP JSON export body (ExportTraceServiceRequest) against
// the fields the protocol documents — opentelemetry-proto's
// collector/trace/v1/trace_service.proto, trace/v1/trace.proto,
// common/v1/common.proto and resource/v1/resource.proto, in the JSON mapping
// of the OTLP specification ("JSON Protobuf Encoding": lowerCamelCase
// names, hex trace and span ids, enums as integers, 64-bit integers as
// strings or numbers). Written from those documents, not from Shoal's
// encoder: a field Shoal misnames or mistypes is a problem here.
#pragma once

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace shoal::testing {

class OtlpJsonCheck {
 public:
  // The problems found in `body` (empty: it conforms).
  static std::vector<std::string> Problems(const std::string& body) {
    OtlpJsonCheck c;
    nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded()) return {"not JSON"};
    c.Object(j, "request", {"resourceSpans"});
    c.Array(j, "resourceSpans", "request", [&](const nlohmann::json& rs, const std::string& at) {
      c.Object(rs, at, {"resource", "scopeSpans", "schemaUrl"});
      if (rs.contains("resource")) {
        c.Object(rs["resource"], at + ".resource",
                 {"attributes", "droppedAttributesCount", "entityRefs"});
        c.KeyValues(rs["resource"], at + ".resource");
      }
      c.Array(rs, "scopeSpans", at, [&](const nlohmann::json& ss, const std::string& at2) {
        c.Object(ss, at2, {"scope", "spans", "schemaUrl"});
        if (ss.contains("scope")) {
          c.Object(ss["scope"], at2 + ".scope",
                   {"name", "version", "attributes", "droppedAttributesCount"});
          c.KeyValues(ss["scope"], at2 + ".scope");
        }
        c.Array(ss, "spans", at2,
                [&](const nlohmann::json& s, const std::string& at3) { c.Span(s, at3); });
      });
    });
    return c.problems_;
  }

 private:
  template <class Fn>
  void Array(const nlohmann::json& parent, const std::string& key, const std::string& at,
             Fn&& each) {
    if (!parent.is_object() || !parent.contains(key)) return;
    const auto& a = parent[key];
    if (!a.is_array()) return Problem(at + "." + key + " is not an array");
    for (size_t i = 0; i < a.size(); ++i)
      each(a[i], at + "." + key + "[" + std::to_string(i) + "]");
  }

  void Object(const nlohmann::json& j, const std::string& at, const std::set<std::string>& fields) {
    if (!j.is_object()) return Problem(at + " is not an object");
    for (const auto& [k, v] : j.items()) {
      if (!fields.count(k)) Problem(at + " has an undocumented field '" + k + "'");
    }
  }

  void Span(const nlohmann::json& s, const std::string& at) {
    Object(s, at,
           {"traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind",
            "startTimeUnixNano", "endTimeUnixNano", "attributes", "droppedAttributesCount",
            "events", "droppedEventsCount", "links", "droppedLinksCount", "status"});
    Hex(s, "traceId", 32, at, /*required=*/true);
    Hex(s, "spanId", 16, at, true);
    if (s.contains("parentSpanId") && s["parentSpanId"] != "")
      Hex(s, "parentSpanId", 16, at, false);
    if (!s.contains("name") || !s["name"].is_string() || s["name"].get<std::string>().empty()) {
      Problem(at + ".name is missing or empty");
    }
    if (s.contains("kind") &&
        !(s["kind"].is_number_integer() && s["kind"] >= 0 && s["kind"] <= 5)) {
      Problem(at + ".kind is not a SpanKind number (0..5)");
    }
    const uint64_t start = Fixed64(s, "startTimeUnixNano", at),
                   end = Fixed64(s, "endTimeUnixNano", at);
    if (end < start) Problem(at + " ends before it starts");
    KeyValues(s, at);
    if (s.contains("status")) {
      Object(s["status"], at + ".status", {"message", "code"});
      const auto& st = s["status"];
      if (st.contains("code") &&
          !(st["code"].is_number_integer() && st["code"] >= 0 && st["code"] <= 2)) {
        Problem(at + ".status.code is not a StatusCode number (0..2)");
      }
      if (st.contains("message") && !st["message"].is_string())
        Problem(at + ".status.message is not a string");
    }
  }

  void Hex(const nlohmann::json& j, const std::string& key, size_t digits, const std::string& at,
           bool required) {
    if (!j.contains(key)) {
      if (required) Problem(at + "." + key + " is missing");
      return;
    }
    const auto& v = j[key];
    const std::string s = v.is_string() ? v.get<std::string>() : "";
    bool ok = s.size() == digits && s.find_first_not_of("0123456789abcdef") == std::string::npos &&
              s != std::string(digits, '0');
    if (!ok)
      Problem(at + "." + key + " is not " + std::to_string(digits) +
              " lowercase hex digits, not all zero");
  }

  // A fixed64 in the JSON mapping: a decimal string (or a number).
  uint64_t Fixed64(const nlohmann::json& j, const std::string& key, const std::string& at) {
    if (!j.contains(key)) {
      Problem(at + "." + key + " is missing");
      return 0;
    }
    const auto& v = j[key];
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos)
        return std::stoull(s);
    }
    Problem(at + "." + key + " is not a fixed64 (a decimal string)");
    return 0;
  }

  void KeyValues(const nlohmann::json& parent, const std::string& at) {
    Array(parent, "attributes", at, [&](const nlohmann::json& kv, const std::string& at2) {
      Object(kv, at2, {"key", "value"});
      if (!kv.contains("key") || !kv["key"].is_string()) Problem(at2 + ".key is not a string");
      if (kv.contains("value")) AnyValue(kv["value"], at2 + ".value");
    });
  }

  void AnyValue(const nlohmann::json& v, const std::string& at) {
    Object(v, at,
           {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue",
            "bytesValue"});
    if (v.size() != 1) return Problem(at + " does not hold exactly one value");
    const auto first = v.begin();  // items().begin() would be a temporary the names outlive
    const std::string& k = first.key();
    const nlohmann::json& x = first.value();
    const bool ok = (k == "stringValue" && x.is_string()) || (k == "boolValue" && x.is_boolean()) ||
                    (k == "intValue" &&
                     (x.is_number_integer() || (x.is_string() && IsInt(x.get<std::string>())))) ||
                    (k == "doubleValue" && x.is_number()) || (k == "arrayValue" && x.is_object()) ||
                    (k == "kvlistValue" && x.is_object()) || (k == "bytesValue" && x.is_string());
    if (!ok) Problem(at + "." + k + " has the wrong JSON type");
  }

  static bool IsInt(const std::string& s) {
    const size_t digits = !s.empty() && s[0] == '-' ? 1 : 0;
    return s.size() > digits && s.find_first_not_of("0123456789", digits) == std::string::npos;
  }

  void Problem(std::string p) { problems_.push_back(std::move(p)); }

  std::vector<std::string> problems_;
};

}  // namespace shoal::testing
