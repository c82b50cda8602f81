#include "wire/request_json.h"

namespace shoal::wire {
namespace {

std::string_view JsonTypeName(od::json_type t) {
  switch (t) {
    case od::json_type::array: return "an array";
    case od::json_type::object: return "an object";
    case od::json_type::number: return "a number";
    case od::json_type::string: return "a string";
    case od::json_type::boolean: return "a boolean";
    case od::json_type::null: return "null";
  }
  return "?";
}

}  // namespace

std::string Field(std::string_view prefix, size_t index, std::string_view suffix) {
  std::string s(prefix);
  s += '[';
  s += std::to_string(index);
  s += ']';
  s += suffix;
  return s;
}

Status CheckItemSize(std::string_view field, size_t bytes, const ParseLimits& limits) {
  if (bytes <= limits.max_item_bytes) return Status::Ok();
  return Status(Code::kPayloadTooLarge, std::string(field) + ": " + std::to_string(bytes) +
                                            " bytes, over the per-item limit of " +
                                            std::to_string(limits.max_item_bytes));
}

Status CheckItemCount(std::string_view field, size_t n, const ParseLimits& limits) {
  if (n == 0) return InvalidInput(std::string(field) + ": must hold at least one item");
  if (n > limits.max_items) {
    return InvalidInput(std::string(field) + ": at most " + std::to_string(limits.max_items) +
                        " items per request (got " + std::to_string(n) + ")");
  }
  return Status::Ok();
}

Status JsonExpected(std::string_view field, std::string_view want, od::value& v) {
  od::json_type t;
  if (v.type().get(t)) return InvalidInput(std::string(field) + ": malformed JSON");
  return InvalidInput(std::string(field) + ": expected " + std::string(want) + ", got " +
                      std::string(JsonTypeName(t)));
}

Status JsonMalformed(simdjson::error_code e) {
  return InvalidInput(std::string("body: malformed JSON (") + simdjson::error_message(e) + ")");
}

Status ReadJsonBool(od::value v, std::string_view field, bool* out) {
  if (v.get_bool().get(*out)) return JsonExpected(field, "a boolean", v);
  return Status::Ok();
}

Status ReadJsonString(od::value v, std::string_view field, std::string_view* out) {
  if (v.get_string().get(*out)) return JsonExpected(field, "a string", v);
  return Status::Ok();
}

Status ReadLora(od::value v, WorkRequest* out) {
  std::string_view lora;
  SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "lora", &lora));
  out->lora = std::string(lora);
  return Status::Ok();
}

void FinishItems(std::unique_ptr<std::string> storage, const std::vector<PendingItem>& pending,
                 WorkRequest* out) {
  out->storage = std::move(storage);
  out->items.clear();
  out->items.reserve(pending.size());
  const std::string_view base(*out->storage);
  for (const auto& p : pending) out->items.push_back({base.substr(p.offset, p.size), p.cost});
}

}  // namespace shoal::wire
