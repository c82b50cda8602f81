#include "wire/encode_request.h"

#include <simdjson.h>

#include "wire/msgpack_reader.h"
#include "wire/work_message.h"

namespace shoal::wire {
namespace {

namespace od = simdjson::ondemand;

std::string Field(std::string_view prefix, size_t index, std::string_view suffix = {}) {
  std::string s(prefix);
  s += '[';
  s += std::to_string(index);
  s += ']';
  s += suffix;
  return s;
}

Status Expected(std::string_view field, std::string_view want, MsgpackType got) {
  return InvalidInput(std::string(field) + ": expected " + std::string(want) + ", got " +
                      std::string(MsgpackTypeName(got)));
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

// ---- MessagePack ----------------------------------------------------------

Status ParseMsgpackItem(MsgpackReader& r, size_t index, const ParseLimits& limits,
                        RequestItem* item) {
  const size_t start = r.offset();
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return Expected(Field("items", index), "a map", r.Peek());
  std::string_view text;
  bool has_text = false;
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return InvalidInput(Field("items", index) + ": field names must be strings");
    if (key != "text") {
      return InvalidInput(Field("items", index) + ": unknown field '" + std::string(key) + "'");
    }
    if (!r.ReadStr(&text)) return Expected(Field("items", index, ".text"), "a string", r.Peek());
    has_text = true;
  }
  if (!has_text) return InvalidInput(Field("items", index, ".text") + ": missing");
  const std::string_view raw = r.buffer().substr(start, r.offset() - start);
  SHOAL_RETURN_IF_ERROR(CheckItemSize(Field("items", index), raw.size(), limits));
  item->payload = raw;
  item->cost = EstimateTokens(text.size());
  return Status::Ok();
}

Status ReadMsgpackBool(MsgpackReader& r, std::string_view field, bool* v) {
  if (!r.ReadBool(v)) return Expected(field, "a boolean", r.Peek());
  return Status::Ok();
}

// ---- JSON -----------------------------------------------------------------

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

// Appends one text as a MessagePack item to storage and records where it is.
struct PendingItem {
  size_t offset, size;
  uint32_t cost;
};

Status AddJsonText(std::string_view field, std::string_view text, const ParseLimits& limits,
                   std::string* storage, std::vector<PendingItem>* pending) {
  const size_t start = storage->size();
  AppendTextItem(text, storage);
  SHOAL_RETURN_IF_ERROR(CheckItemSize(field, storage->size() - start, limits));
  pending->push_back({start, storage->size() - start, EstimateTokens(text.size())});
  if (pending->size() > limits.max_items) return CheckItemCount("items", pending->size(), limits);
  return Status::Ok();
}

void Finish(std::unique_ptr<std::string> storage, const std::vector<PendingItem>& pending,
            EncodeRequest* out) {
  out->storage = std::move(storage);
  out->items.clear();
  out->items.reserve(pending.size());
  const std::string_view base(*out->storage);
  for (const auto& p : pending) out->items.push_back({base.substr(p.offset, p.size), p.cost});
}

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

}  // namespace

uint32_t EstimateTokens(size_t text_bytes) { return static_cast<uint32_t>(text_bytes / 4 + 1); }

Status ParseEncodeMsgpack(std::string_view body, const ParseLimits& limits, EncodeRequest* out) {
  if (body.empty()) return InvalidInput("body: empty");
  MsgpackReader r(body);
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return Expected("body", "a map", r.Peek());
  bool has_items = false;
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return InvalidInput("body: field names must be strings");
    if (key == "items") {
      uint32_t n;
      if (!r.ReadArrayHeader(&n)) return Expected("items", "an array", r.Peek());
      SHOAL_RETURN_IF_ERROR(CheckItemCount("items", n, limits));
      out->items.resize(n);
      for (uint32_t i = 0; i < n; ++i) {
        SHOAL_RETURN_IF_ERROR(ParseMsgpackItem(r, i, limits, &out->items[i]));
      }
      has_items = true;
    } else if (key == "truncate") {
      SHOAL_RETURN_IF_ERROR(ReadMsgpackBool(r, "truncate", &out->options.truncate));
    } else if (key == "normalize") {
      SHOAL_RETURN_IF_ERROR(ReadMsgpackBool(r, "normalize", &out->options.normalize));
    } else {
      return InvalidInput("body: unknown field '" + std::string(key) + "'");
    }
  }
  if (!has_items) return InvalidInput("items: missing");
  if (!r.AtEnd()) return InvalidInput("body: trailing bytes after the request");
  return Status::Ok();
}

Status ParseEncodeJson(std::string& body, const ParseLimits& limits, EncodeRequest* out) {
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  bool has_items = false;
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "items") {
      od::array arr;
      if (v.get_array().get(arr)) return JsonExpected("items", "an array", v);
      size_t i = 0;
      for (auto el_result : arr) {
        od::value el;
        if (auto e = std::move(el_result).get(el)) return JsonMalformed(e);
        od::object item;
        if (el.get_object().get(item)) return JsonExpected(Field("items", i), "an object", el);
        bool has_text = false;
        for (auto f_result : item) {
          od::field f;
          if (auto e = std::move(f_result).get(f)) return JsonMalformed(e);
          std::string_view k;
          if (auto e = f.unescaped_key().get(k)) return JsonMalformed(e);
          if (k != "text") {
            return InvalidInput(Field("items", i) + ": unknown field '" + std::string(k) + "'");
          }
          od::value tv = f.value();
          std::string_view text;
          if (tv.get_string().get(text)) return JsonExpected(Field("items", i, ".text"), "a string", tv);
          SHOAL_RETURN_IF_ERROR(AddJsonText(Field("items", i), text, limits, storage.get(), &pending));
          has_text = true;
        }
        if (!has_text) return InvalidInput(Field("items", i, ".text") + ": missing");
        ++i;
      }
      has_items = true;
      return CheckItemCount("items", pending.size(), limits);
    }
    if (key == "truncate") return ReadJsonBool(v, "truncate", &out->options.truncate);
    if (key == "normalize") return ReadJsonBool(v, "normalize", &out->options.normalize);
    return InvalidInput("body: unknown field '" + std::string(key) + "'");
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (!has_items) return InvalidInput("items: missing");
  Finish(std::move(storage), pending, out);
  return Status::Ok();
}

Status ParseOpenAiEmbeddings(std::string& body, const ParseLimits& limits, EncodeRequest* out) {
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  bool has_input = false;
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "model") {
      std::string_view m;
      if (v.get_string().get(m)) return JsonExpected("model", "a string", v);
      out->model = std::string(m);
      return Status::Ok();
    }
    if (key == "input") {
      has_input = true;
      od::json_type t;
      if (v.type().get(t)) return InvalidInput("input: malformed JSON");
      if (t == od::json_type::string) {
        std::string_view text;
        if (auto e = v.get_string().get(text)) return JsonMalformed(e);
        return AddJsonText("input", text, limits, storage.get(), &pending);
      }
      od::array arr;
      if (v.get_array().get(arr)) return JsonExpected("input", "a string or an array of strings", v);
      size_t i = 0;
      for (auto el_result : arr) {
        od::value el;
        if (auto e = std::move(el_result).get(el)) return JsonMalformed(e);
        std::string_view text;
        if (el.get_string().get(text)) {
          od::json_type et;
          if (!el.type().get(et) && (et == od::json_type::number || et == od::json_type::array)) {
            return InvalidInput("input: token-id inputs are not supported; send text");
          }
          return JsonExpected(Field("input", i), "a string", el);
        }
        SHOAL_RETURN_IF_ERROR(AddJsonText(Field("input", i), text, limits, storage.get(), &pending));
        ++i;
      }
      return CheckItemCount("input", pending.size(), limits);
    }
    if (key == "encoding_format") {
      std::string_view f;
      if (v.get_string().get(f)) return JsonExpected("encoding_format", "a string", v);
      if (f != "float" && f != "base64") {
        return InvalidInput("encoding_format: must be \"float\" or \"base64\", got \"" +
                            std::string(f) + "\"");
      }
      out->base64 = f == "base64";
      return Status::Ok();
    }
    if (key == "dimensions") {
      return InvalidInput("dimensions: not supported; the model's own dimension is returned");
    }
    // Other OpenAI fields ("user", ...) carry nothing Shoal acts on.
    return Status::Ok();
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (out->model.empty()) return InvalidInput("model: missing");
  if (!has_input) return InvalidInput("input: missing");
  Finish(std::move(storage), pending, out);
  return Status::Ok();
}

}  // namespace shoal::wire
