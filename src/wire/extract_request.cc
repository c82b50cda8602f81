#include "wire/extract_request.h"

#include "wire/native_body.h"

namespace shoal::wire {
namespace {

Status SetAggregation(std::string_view name, WorkRequest* out) {
  Aggregation a;
  if (!ParseAggregation(name, &a)) {
    return InvalidInput("aggregation: '" + std::string(name) + "' is none of none, simple, first, average, max");
  }
  out->extract.aggregation = a;
  return Status::Ok();
}

Status SetTopK(bool is_int, int64_t n, WorkRequest* out) {
  if (!is_int || n < 1 || n > UINT32_MAX) return InvalidInput("top_k: expected a positive integer");
  out->extract.top_k = static_cast<uint32_t>(n);
  return Status::Ok();
}

Status SetOutput(std::string_view name, WorkRequest* out) {
  if (name != "ocr") return InvalidInput("output: '" + std::string(name) + "' is not an extract output (ocr)");
  out->extract.ocr = true;
  return Status::Ok();
}

}  // namespace

Status ParseExtractMsgpack(std::string_view body, const ParseLimits& limits, WorkRequest* out) {
  out->task = Task::kExtract;
  return ParseNativeMsgpack(body, limits, out, [&](std::string_view key, MsgpackReader& r) -> Status {
    if (key == "aggregation") {
      std::string_view name;
      if (!r.ReadStr(&name)) return MsgpackExpected("aggregation", "a string", r);
      return SetAggregation(name, out);
    }
    if (key == "top_k") {
      int64_t n = 0;
      const bool is_int = r.ReadInt(&n);
      return SetTopK(is_int, n, out);
    }
    if (key == "output") {
      std::string_view name;
      if (!r.ReadStr(&name)) return MsgpackExpected("output", "a string", r);
      return SetOutput(name, out);
    }
    return UnknownField(key);
  });
}

Status ParseExtractJson(std::string& body, const ParseLimits& limits, WorkRequest* out) {
  out->task = Task::kExtract;
  return ParseNativeJson(body, limits, out, [&](std::string_view key, od::value v) -> Status {
    if (key == "aggregation") {
      std::string_view name;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "aggregation", &name));
      return SetAggregation(name, out);
    }
    if (key == "top_k") {
      int64_t n = 0;
      const bool is_int = !v.get_int64().get(n);
      return SetTopK(is_int, n, out);
    }
    if (key == "output") {
      std::string_view name;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "output", &name));
      return SetOutput(name, out);
    }
    return UnknownField(key);
  });
}

}  // namespace shoal::wire
