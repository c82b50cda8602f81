#include "wire/request_json.h"

#include "common/base64.h"
#include "wire/item.h"

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

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code unit of the \uXXXX escape at raw[i] (raw[i] == '\\'), or -1.
int32_t UnicodeEscape(std::string_view raw, size_t i) {
  if (i + 6 > raw.size() || raw[i + 1] != 'u') return -1;
  int32_t unit = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    const int h = HexValue(raw[k]);
    if (h < 0) return -1;
    unit = unit * 16 + h;
  }
  return unit;
}

// What is wrong with a JSON string simdjson would not unescape, from its raw
// token (quotes included).
std::string StringProblem(std::string_view raw) {
  for (size_t i = 1; i < raw.size(); ++i) {  // after the opening quote
    const unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c == '"') break;
    if (c < 0x20) return "control character in a string (escape it)";
    if (c != '\\') continue;
    if (i + 1 >= raw.size()) break;
    const char e = raw[i + 1];
    if (e != 'u') {
      if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
        return std::string("invalid escape '\\") + e + "' in a string";
      }
      ++i;
      continue;
    }
    const int32_t unit = UnicodeEscape(raw, i);
    if (unit < 0) return "invalid \\u escape in a string (four hex digits)";
    const std::string at = " (" + std::string(raw.substr(i, 6)) + ")";
    if (unit >= 0xDC00 && unit <= 0xDFFF) return "invalid UTF-16 surrogate: a low surrogate alone" + at;
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      const int32_t low = UnicodeEscape(raw, i + 6);
      if (low < 0xDC00 || low > 0xDFFF) return "invalid UTF-16 surrogate: a high surrogate alone" + at;
      i += 6;
    }
    i += 5;
  }
  return "invalid string";
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
  if (e == simdjson::STRING_ERROR) {
    return InvalidInput("body: malformed JSON (a string with an invalid escape or UTF-16 surrogate)");
  }
  return InvalidInput(std::string("body: malformed JSON (") + simdjson::error_message(e) + ")");
}

Status ReadJsonBool(od::value v, std::string_view field, bool* out) {
  if (v.get_bool().get(*out)) return JsonExpected(field, "a boolean", v);
  return Status::Ok();
}

Status ReadJsonString(od::value v, std::string_view field, std::string_view* out) {
  const auto e = v.get_string().get(*out);
  if (e == simdjson::SUCCESS) return Status::Ok();
  if (e == simdjson::STRING_ERROR) return InvalidInput(std::string(field) + ": " + StringProblem(v.raw_json_token()));
  return JsonExpected(field, "a string", v);
}

Status ReadLora(od::value v, WorkRequest* out) {
  std::string_view lora;
  SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "lora", &lora));
  out->lora = std::string(lora);
  return Status::Ok();
}

Status ReadModel(od::value v, WorkRequest* out) {
  std::string_view model;
  SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "model", &model));
  out->model = std::string(model);
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

Status AddJsonText(std::string_view field, std::string_view text, const ParseLimits& limits,
                   std::string* storage, std::vector<PendingItem>* pending) {
  return AddItem(field, EstimateTokens(text.size()), limits, storage, pending,
                 [&](std::string* out) { AppendTextItem(text, out); });
}

Status DecodeJsonImage(std::string_view field, std::string_view text, std::string* bytes) {
  if (text.substr(0, 5) == "data:") {  // data:[<media type>][;base64],<data>: only base64 carries bytes
    const size_t comma = text.find(',');
    if (comma == std::string_view::npos || text.substr(0, comma).find(";base64") == std::string_view::npos) {
      return InvalidInput(std::string(field) + ": a data URL must be base64 (data:image/png;base64,...)");
    }
    text.remove_prefix(comma + 1);
  }
  if (!DecodeBase64(text, bytes)) {
    return InvalidInput(std::string(field) + ": expected an image as base64 or a base64 data URL");
  }
  if (bytes->empty()) return InvalidInput(std::string(field) + ": empty");
  return Status::Ok();
}

Status AddJsonImage(std::string_view field, std::string_view text, const ParseLimits& limits, std::string* storage,
                    std::vector<PendingItem>* pending) {
  std::string bytes;
  SHOAL_RETURN_IF_ERROR(DecodeJsonImage(field, text, &bytes));
  return AddItem(field, kImageItemCost, limits, storage, pending,
                 [&](std::string* out) { AppendImageItem(bytes, out); });
}

Status AddJsonDocument(std::string_view field, std::string_view text, const DocumentOptions& options,
                       const ParseLimits& limits, std::string* storage, std::vector<PendingItem>* pending) {
  std::string bytes;
  SHOAL_RETURN_IF_ERROR(DecodeJsonImage(field, text, &bytes));
  return AddItem(field, kImageItemCost, limits, storage, pending,
                 [&](std::string* out) { AppendDocumentItem(bytes, options, out); });
}

}  // namespace shoal::wire
