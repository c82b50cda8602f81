#include "wire/encode_request.h"

#include <simdjson.h>

#include <algorithm>

#include "wire/msgpack_reader.h"
#include "wire/request_json.h"
#include "wire/item.h"

namespace shoal::wire {
namespace {

Status AddJsonText(std::string_view field, std::string_view text, const ParseLimits& limits,
                   std::string* storage, std::vector<PendingItem>* pending) {
  return AddItem(field, EstimateTokens(text.size()), limits, storage, pending,
                 [&](std::string* out) { AppendTextItem(text, out); });
}


Status ParseMsgpackItem(MsgpackReader& r, size_t index, const ParseLimits& limits,
                        RequestItem* item) {
  const size_t start = r.offset();
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return MsgpackExpected(Field("items", index), "a map", r);
  std::string_view text;
  bool has_text = false;
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return MsgpackExpected(Field("items", index), "a field name (a string)", r);
    if (key != "text") {
      return InvalidInput(Field("items", index) + ": unknown field '" + std::string(key) + "'");
    }
    if (!r.ReadStr(&text)) return MsgpackExpected(Field("items", index, ".text"), "a string", r);
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
  if (!r.ReadBool(v)) return MsgpackExpected(field, "a boolean", r);
  return Status::Ok();
}

Status CheckDimensions(std::string_view field, int64_t n, uint32_t* out) {
  if (n < 1 || n > (1 << 20)) return InvalidInput(std::string(field) + ": expected a positive integer");
  *out = static_cast<uint32_t>(n);
  return Status::Ok();
}

Status ReadJsonDimensions(od::value v, std::string_view field, uint32_t* out) {
  int64_t n;
  if (v.get_int64().get(n)) return InvalidInput(std::string(field) + ": expected a positive integer");
  return CheckDimensions(field, n, out);
}

Status CheckDenseType(std::string_view field, std::string_view name, DenseType* t) {
  if (!ParseDenseType(name, t)) {
    return InvalidInput(std::string(field) + ": '" + std::string(name) +
                        "' is none of float32, float16, int8, uint8, binary, ubinary");
  }
  return Status::Ok();
}

}  // namespace

uint32_t EstimateTokens(size_t text_bytes) { return static_cast<uint32_t>(text_bytes / 4 + 1); }

Status ParseEncodeMsgpack(std::string_view body, const ParseLimits& limits, WorkRequest* out) {
  if (body.empty()) return InvalidInput("body: empty");
  MsgpackReader r(body);
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return MsgpackExpected("body", "a map", r);
  bool has_items = false;
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return MsgpackExpected("body", "a field name (a string)", r);
    if (key == "items") {
      uint32_t n;
      if (!r.ReadArrayHeader(&n)) return MsgpackExpected("items", "an array", r);
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
    } else if (key == "lora") {
      std::string_view lora;
      if (!r.ReadStr(&lora)) return MsgpackExpected("lora", "a string", r);
      out->lora = std::string(lora);
    } else if (key == "dimensions") {
      int64_t n;
      if (!r.ReadInt(&n)) return MsgpackExpected("dimensions", "a positive integer", r);
      SHOAL_RETURN_IF_ERROR(CheckDimensions("dimensions", n, &out->dense.dimensions));
    } else if (key == "dtype") {
      std::string_view name;
      if (!r.ReadStr(&name)) return MsgpackExpected("dtype", "a string", r);
      DenseType t;
      SHOAL_RETURN_IF_ERROR(CheckDenseType("dtype", name, &t));
      out->dense.types = {t};
    } else {
      return InvalidInput("body: unknown field '" + std::string(key) + "'");
    }
  }
  if (!has_items) return InvalidInput("items: missing");
  if (!r.AtEnd()) return InvalidInput("body: trailing bytes after the request");
  return Status::Ok();
}

Status ParseEncodeJson(std::string& body, const ParseLimits& limits, WorkRequest* out) {
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
          SHOAL_RETURN_IF_ERROR(ReadJsonString(tv, Field("items", i, ".text"), &text));
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
    if (key == "lora") return ReadLora(v, out);
    if (key == "dimensions") return ReadJsonDimensions(v, "dimensions", &out->dense.dimensions);
    if (key == "dtype") {
      std::string_view name;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "dtype", &name));
      DenseType t;
      SHOAL_RETURN_IF_ERROR(CheckDenseType("dtype", name, &t));
      out->dense.types = {t};
      return Status::Ok();
    }
    return InvalidInput("body: unknown field '" + std::string(key) + "'");
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (!has_items) return InvalidInput("items: missing");
  FinishItems(std::move(storage), pending, out);
  return Status::Ok();
}

Status ParseOpenAiEmbeddings(std::string& body, const ParseLimits& limits, WorkRequest* out) {
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  bool has_input = false;
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "model") return ReadModel(v, out);
    if (key == "input") {
      has_input = true;
      SHOAL_RETURN_IF_ERROR(ForEachJsonText(v, "input", [&](const std::string& field, std::string_view text) {
        return AddJsonText(field, text, limits, storage.get(), &pending);
      }));
      return CheckItemCount("input", pending.size(), limits);
    }
    if (key == "encoding_format") {
      std::string_view f;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "encoding_format", &f));
      if (f != "float" && f != "base64") {
        return InvalidInput("encoding_format: must be \"float\" or \"base64\", got \"" +
                            std::string(f) + "\"");
      }
      out->base64 = f == "base64";
      return Status::Ok();
    }
    if (key == "dimensions") return ReadJsonDimensions(v, "dimensions", &out->dense.dimensions);
    // "user" and the rest: refused, not accepted and ignored.
    return InvalidInput("body: unknown field '" + std::string(key) + "' (see docs/api.md)");
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (out->model.empty()) return InvalidInput("model: missing");
  if (!has_input) return InvalidInput("input: missing");
  FinishItems(std::move(storage), pending, out);
  return Status::Ok();
}

Status ParseCohereEmbed(std::string& body, int version, const ParseLimits& limits, WorkRequest* out) {
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  bool has_texts = false;
  out->cohere.version = version;
  out->options.truncate = true;  // Cohere's default, "END"
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "model") return ReadModel(v, out);
    if (key == "texts") {
      has_texts = true;
      SHOAL_RETURN_IF_ERROR(ForEachJsonString(v, "texts", [&](const std::string& field, std::string_view text) {
        out->cohere.texts.emplace_back(text);
        return AddJsonText(field, text, limits, storage.get(), &pending);
      }));
      return CheckItemCount("texts", pending.size(), limits);
    }
    if (key == "input_type") {
      std::string_view t;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "input_type", &t));
      if (t != "search_query" && t != "search_document" && t != "classification" && t != "clustering") {
        return InvalidInput("input_type: '" + std::string(t) +
                            "' is none of search_query, search_document, classification, clustering");
      }
      out->cohere.input_type = std::string(t);
      return Status::Ok();
    }
    if (key == "embedding_types") {
      SHOAL_RETURN_IF_ERROR(
          ForEachJsonString(v, "embedding_types", [&](const std::string& field, std::string_view name) -> Status {
            DenseType t;
            if (name == "float32" || name == "float16" || !ParseDenseType(name, &t)) {
              return InvalidInput(field + ": '" + std::string(name) + "' is none of float, int8, uint8, binary, ubinary");
            }
            if (std::find(out->dense.types.begin(), out->dense.types.end(), t) != out->dense.types.end()) {
              return InvalidInput(field + ": '" + std::string(name) + "' twice");
            }
            out->dense.types.push_back(t);
            return Status::Ok();
          }));
      if (out->dense.types.empty()) return InvalidInput("embedding_types: empty");
      out->cohere.by_type = true;
      return Status::Ok();
    }
    if (key == "truncate") {
      std::string_view t;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "truncate", &t));
      if (t == "START") return InvalidInput("truncate: START is not supported (Shoal cuts the end: END)");
      if (t != "NONE" && t != "END") return InvalidInput("truncate: '" + std::string(t) + "' is none of NONE, END");
      out->options.truncate = t == "END";
      return Status::Ok();
    }
    if (key == "output_dimension" && version == 2) {
      return ReadJsonDimensions(v, "output_dimension", &out->dense.dimensions);
    }
    return InvalidInput("body: unknown field '" + std::string(key) + "' (see docs/api.md)");
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (out->model.empty()) return InvalidInput("model: missing");
  if (!has_texts) return InvalidInput("texts: missing");
  if (version == 2 && out->dense.types.empty()) out->dense.types = {DenseType::kFloat32};
  FinishItems(std::move(storage), pending, out);
  return Status::Ok();
}

Status PrefixTexts(std::string_view prefix, const ParseLimits& limits, WorkRequest* request) {
  if (prefix.empty()) return Status::Ok();
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  std::string text;
  for (size_t i = 0; i < request->items.size(); ++i) {
    std::string_view original;
    SHOAL_RETURN_IF_ERROR(DecodeTextItem(request->items[i].payload, &original));
    text.assign(prefix).append(original);
    SHOAL_RETURN_IF_ERROR(AddJsonText(Field("items", i), text, limits, storage.get(), &pending));
  }
  FinishItems(std::move(storage), pending, request);
  return Status::Ok();
}

}  // namespace shoal::wire
