// What the request parsers (encode_request.cc, score_request.cc) share:
// field names for error messages, item limits, JSON helpers over simdjson's
// on-demand API, and the MessagePack items built from JSON text.
// Internal to src/wire; not a public header.
#pragma once

#include <simdjson.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "wire/encode_request.h"
#include "wire/item.h"

namespace shoal::wire {

namespace od = simdjson::ondemand;

// "items[2]" + suffix.
std::string Field(std::string_view prefix, size_t index, std::string_view suffix = {});

Status CheckItemSize(std::string_view field, size_t bytes, const ParseLimits& limits);
Status CheckItemCount(std::string_view field, size_t n, const ParseLimits& limits);

Status JsonExpected(std::string_view field, std::string_view want, od::value& v);
Status JsonMalformed(simdjson::error_code e);
Status ReadJsonBool(od::value v, std::string_view field, bool* out);
// A string; one simdjson cannot unescape is refused saying why (an invalid
// escape or UTF-16 surrogate).
Status ReadJsonString(od::value v, std::string_view field, std::string_view* out);
// The native routes' "lora" field into out->lora.
Status ReadLora(od::value v, WorkRequest* out);
// The OpenAI and Cohere routes' "model" field into out->model.
Status ReadModel(od::value v, WorkRequest* out);

// Items appended to a storage string as MessagePack, recorded by position
// (the string may reallocate while it grows).
struct PendingItem {
  size_t offset, size;
  uint32_t cost;
};

// Appends one item: `append` writes it to `storage`; the size is checked.
template <class Append>
Status AddItem(std::string_view field, uint32_t cost, const ParseLimits& limits, std::string* storage,
               std::vector<PendingItem>* pending, Append&& append) {
  const size_t start = storage->size();
  append(storage);
  SHOAL_RETURN_IF_ERROR(CheckItemSize(field, storage->size() - start, limits));
  pending->push_back({start, storage->size() - start, cost});
  if (pending->size() > limits.max_items) return CheckItemCount(field, pending->size(), limits);
  return Status::Ok();
}

// AddItem for a text item ({"text": text}), its cost estimated from its length.
Status AddJsonText(std::string_view field, std::string_view text, const ParseLimits& limits,
                   std::string* storage, std::vector<PendingItem>* pending);

// An image's (or a document's) bytes from a JSON string's text: base64, or
// a data URL with base64 data (its media type is not read: the format is
// the bytes' own signature, checked where the file is decoded). Errors name
// `field`.
Status DecodeJsonImage(std::string_view field, std::string_view text, std::string* bytes);

// AddItem for an image item ({"image": bytes}) from a JSON string's text, as
// DecodeJsonImage reads it.
Status AddJsonImage(std::string_view field, std::string_view text, const ParseLimits& limits, std::string* storage,
                    std::vector<PendingItem>* pending);

// AddItem for a document item ({"document": bytes, "pages", "text_layer"}) from a
// JSON string's text (base64 or a base64 data URL, as an image's).
Status AddJsonDocument(std::string_view field, std::string_view text, const DocumentOptions& options,
                       const ParseLimits& limits, std::string* storage, std::vector<PendingItem>* pending);

// Moves `storage` into `out` and points out->items into it.
void FinishItems(std::unique_ptr<std::string> storage, const std::vector<PendingItem>& pending,
                 WorkRequest* out);

// Parses `body` as one JSON object and calls `on_field(key, value)` per field.
template <class OnField>
Status ForEachJsonField(std::string& body, OnField&& on_field) {
  if (body.empty()) return InvalidInput("body: empty");
  thread_local od::parser parser;
  body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  simdjson::padded_string_view json(body.data(), body.size(), body.capacity());
  od::document doc;
  if (auto e = parser.iterate(json).get(doc)) return JsonMalformed(e);
  od::object obj;
  if (auto e = doc.get_object().get(obj)) {
    if (e == simdjson::INCORRECT_TYPE) return InvalidInput("body: expected a JSON object");
    return JsonMalformed(e);
  }
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return JsonMalformed(e);
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return JsonMalformed(e);
    SHOAL_RETURN_IF_ERROR(on_field(key, field.value()));
  }
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    return InvalidInput("body: trailing content after the JSON object");
  }
  return Status::Ok();
}

// Calls `each(field, text)` for each string of an array of strings (`field`
// names the element, e.g. "texts[3]").
template <class Each>
Status ForEachJsonString(od::value v, std::string_view field, Each&& each) {
  od::array arr;
  if (v.get_array().get(arr)) return JsonExpected(field, "an array of strings", v);
  size_t i = 0;
  for (auto el_result : arr) {
    od::value el;
    if (auto e = std::move(el_result).get(el)) return JsonMalformed(e);
    std::string_view text;
    SHOAL_RETURN_IF_ERROR(ReadJsonString(el, Field(field, i), &text));
    SHOAL_RETURN_IF_ERROR(each(Field(field, i), text));
    ++i;
  }
  return Status::Ok();
}

// Calls `each(field, text)` for a string or each string of an array of
// strings (`field` names the element, e.g. "input[3]").
template <class Each>
Status ForEachJsonText(od::value v, std::string_view field, Each&& each) {
  od::json_type t;
  if (v.type().get(t)) return InvalidInput(std::string(field) + ": malformed JSON");
  if (t == od::json_type::string) {
    std::string_view text;
    SHOAL_RETURN_IF_ERROR(ReadJsonString(v, field, &text));
    return each(std::string(field), text);
  }
  od::array arr;
  if (v.get_array().get(arr)) return JsonExpected(field, "a string or an array of strings", v);
  size_t i = 0;
  for (auto el_result : arr) {
    od::value el;
    if (auto e = std::move(el_result).get(el)) return JsonMalformed(e);
    od::json_type et;
    if (!el.type().get(et) && (et == od::json_type::number || et == od::json_type::array)) {
      return InvalidInput(std::string(field) + ": token-id inputs are not supported; send text");
    }
    std::string_view text;
    SHOAL_RETURN_IF_ERROR(ReadJsonString(el, Field(field, i), &text));
    SHOAL_RETURN_IF_ERROR(each(Field(field, i), text));
    ++i;
  }
  return Status::Ok();
}

}  // namespace shoal::wire
