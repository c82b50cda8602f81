#include "wire/encode_request.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>

#include "wire/item.h"
#include "wire/msgpack_reader.h"
#include "wire/native_body.h"
#include "wire/request_json.h"

namespace shoal::wire {
namespace {

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

// One name of "output" into the set.
Status AddOutput(std::string_view field, std::string_view name, OutputKinds* set) {
  OutputKind k;
  if (!ParseOutputKind(name, &k)) {
    return InvalidInput(std::string(field) + ": '" + std::string(name) + "' is none of dense, sparse, multivector");
  }
  *set |= static_cast<OutputKinds>(k);
  return Status::Ok();
}

Status CheckInputType(std::string_view name, InputRole* role) {
  if (!ParseInputRole(name, role)) {
    return InvalidInput("input_type: '" + std::string(name) + "' is neither query nor document");
  }
  return Status::Ok();
}

Status CheckSparseTopK(int64_t n, uint32_t* out) {
  if (n < 1 || n > INT32_MAX) return InvalidInput("sparse_top_k: expected a positive integer");
  *out = static_cast<uint32_t>(n);
  return Status::Ok();
}

// A token id: a non-negative integer that fits int32.
Status ReadTokenId(od::value v, const std::string& field, int32_t* id) {
  int64_t n = 0;
  if (v.get_int64().get(n) || n < 0 || n > INT32_MAX) {
    return InvalidInput(field + ": expected a token id (a non-negative integer)");
  }
  *id = static_cast<int32_t>(n);
  return Status::Ok();
}

Status AddIds(const std::string& field, const std::vector<int32_t>& ids, const ParseLimits& limits,
              std::string* storage, std::vector<PendingItem>* pending) {
  if (ids.empty()) return InvalidInput(field + ": empty");
  return AddItem(field, static_cast<uint32_t>(ids.size()), limits, storage, pending,
                 [&](std::string* out) { AppendIdsItem(ids, out); });
}

// An image part's "image_url": {"url": "data:...;base64,...", "detail": "auto"}.
Status ReadImageUrl(od::value v, const std::string& field, const ParseLimits& limits, std::string* storage,
                    std::vector<PendingItem>* pending) {
  od::object image_url;
  if (v.get_object().get(image_url)) return InvalidInput(field + ": expected {\"url\": ...}");
  bool has_url = false;
  for (auto f_result : image_url) {
    od::field f;
    if (auto e = std::move(f_result).get(f)) return JsonMalformed(e);
    std::string_view k;
    if (auto e = f.unescaped_key().get(k)) return JsonMalformed(e);
    const std::string where = field + "." + std::string(k);
    std::string_view text;
    if (k != "url" && k != "detail") return InvalidInput(field + ": unknown field '" + std::string(k) + "'");
    SHOAL_RETURN_IF_ERROR(ReadJsonString(f.value(), where, &text));
    if (k == "detail") {
      if (text != "auto") return InvalidInput(where + ": only \"auto\" (the model's own input size)");
      continue;
    }
    if (text.substr(0, 5) != "data:") {
      return InvalidInput(where + ": only data: URLs (Shoal fetches nothing; send the image inline)");
    }
    SHOAL_RETURN_IF_ERROR(AddJsonImage(where, text, limits, storage, pending));
    has_url = true;
  }
  return has_url ? Status::Ok() : InvalidInput(field + ".url: missing");
}

// An OpenAI-style image part: {"type": "image_url", "image_url": {...}}
// (ReadImageUrl). An http(s) URL is refused: Shoal fetches nothing.
Status ReadImagePart(od::value v, const std::string& field, const ParseLimits& limits, std::string* storage,
                     std::vector<PendingItem>* pending) {
  od::object part;
  if (v.get_object().get(part)) return JsonExpected(field, "an image part", v);
  bool typed = false, has_image = false;
  for (auto f_result : part) {
    od::field f;
    if (auto e = std::move(f_result).get(f)) return JsonMalformed(e);
    std::string_view k;
    if (auto e = f.unescaped_key().get(k)) return JsonMalformed(e);
    if (k == "type") {
      std::string_view type;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(f.value(), field + ".type", &type));
      if (type != "image_url") return InvalidInput(field + ".type: '" + std::string(type) + "' is not image_url");
      typed = true;
    } else if (k == "image_url") {
      SHOAL_RETURN_IF_ERROR(ReadImageUrl(f.value(), field + ".image_url", limits, storage, pending));
      has_image = true;
    } else {
      return InvalidInput(field + ": unknown field '" + std::string(k) + "'");
    }
  }
  if (!typed) return InvalidInput(field + ".type: missing");
  if (!has_image) return InvalidInput(field + ".image_url.url: missing");
  return Status::Ok();
}

// OpenAI's "input": a string, an array of strings, an array of token ids
// (one input), or an array of arrays of token ids — one kind, not mixed —
// where Shoal also takes image parts among the strings (ReadImagePart).
Status ReadOpenAiInput(od::value v, const ParseLimits& limits, std::string* storage,
                       std::vector<PendingItem>* pending) {
  od::json_type t;
  if (v.type().get(t)) return InvalidInput("input: malformed JSON");
  if (t == od::json_type::string) {
    std::string_view text;
    SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "input", &text));
    return AddJsonText("input", text, limits, storage, pending);
  }
  od::array arr;
  if (v.get_array().get(arr)) {
    return JsonExpected("input", "a string, an array of strings or token ids, or an array of arrays of token ids", v);
  }
  std::vector<int32_t> flat;  // input is one sequence of ids
  od::json_type first = od::json_type::null;
  size_t i = 0;
  for (auto el_result : arr) {
    od::value el;
    if (auto e = std::move(el_result).get(el)) return JsonMalformed(e);
    od::json_type et;
    if (el.type().get(et)) return InvalidInput(Field("input", i) + ": malformed JSON");
    const bool image_part = et == od::json_type::object;
    if (image_part) et = od::json_type::string;  // an image part goes with texts
    if (i == 0) first = et;
    const std::string field = Field("input", i);
    if (et != first) return InvalidInput(field + ": input mixes texts and token ids, or ids and arrays of ids");
    if (et == od::json_type::number) {
      int32_t id;
      SHOAL_RETURN_IF_ERROR(ReadTokenId(el, field, &id));
      flat.push_back(id);
    } else if (et == od::json_type::array) {
      od::array inner;
      if (auto e = el.get_array().get(inner)) return JsonMalformed(e);
      std::vector<int32_t> ids;
      size_t k = 0;
      for (auto id_result : inner) {
        od::value idv;
        if (auto e = std::move(id_result).get(idv)) return JsonMalformed(e);
        int32_t id;
        SHOAL_RETURN_IF_ERROR(ReadTokenId(idv, Field(field, k++), &id));
        ids.push_back(id);
      }
      SHOAL_RETURN_IF_ERROR(AddIds(field, ids, limits, storage, pending));
    } else if (image_part) {
      SHOAL_RETURN_IF_ERROR(ReadImagePart(el, field, limits, storage, pending));
    } else {
      std::string_view text;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(el, field, &text));
      SHOAL_RETURN_IF_ERROR(AddJsonText(field, text, limits, storage, pending));
    }
    ++i;
  }
  if (first == od::json_type::number) return AddIds("input", flat, limits, storage, pending);
  return Status::Ok();
}

}  // namespace

uint32_t EstimateTokens(size_t text_bytes) { return static_cast<uint32_t>(text_bytes / 4 + 1); }

Status ParseEncodeMsgpack(std::string_view body, const ParseLimits& limits, WorkRequest* out) {
  return ParseNativeMsgpack(body, limits, out, [&](std::string_view key, MsgpackReader& r) -> Status {
    if (key == "normalize") {
      if (!r.ReadBool(&out->options.normalize)) return MsgpackExpected("normalize", "a boolean", r);
      return Status::Ok();
    }
    if (key == "dimensions") {
      int64_t n;
      if (!r.ReadInt(&n)) return MsgpackExpected("dimensions", "a positive integer", r);
      return CheckDimensions("dimensions", n, &out->dense.dimensions);
    }
    if (key == "dtype") {
      std::string_view name;
      if (!r.ReadStr(&name)) return MsgpackExpected("dtype", "a string", r);
      DenseType t;
      SHOAL_RETURN_IF_ERROR(CheckDenseType("dtype", name, &t));
      out->dense.types = {t};
      return Status::Ok();
    }
    EncodeOptions& o = out->options;
    if (key == "output") {
      std::string_view name;
      if (r.Peek() == MsgpackType::kStr) {
        if (!r.ReadStr(&name)) return MsgpackExpected("output", "a string", r);
        return AddOutput("output", name, &o.outputs);
      }
      uint32_t n;
      if (!r.ReadArrayHeader(&n) || n == 0) return MsgpackExpected("output", "an output name or a list of them", r);
      for (uint32_t i = 0; i < n; ++i) {
        if (!r.ReadStr(&name)) return MsgpackExpected(Field("output", i), "a string", r);
        SHOAL_RETURN_IF_ERROR(AddOutput(Field("output", i), name, &o.outputs));
      }
      return Status::Ok();
    }
    if (key == "input_type") {
      std::string_view name;
      if (!r.ReadStr(&name)) return MsgpackExpected("input_type", "a string", r);
      return CheckInputType(name, &o.role);
    }
    if (key == "sparse_top_k") {
      int64_t n;
      if (!r.ReadInt(&n)) return MsgpackExpected("sparse_top_k", "a positive integer", r);
      return CheckSparseTopK(n, &o.sparse_top_k);
    }
    if (key == "sparse_tokens") {
      if (!r.ReadBool(&o.sparse_tokens)) return MsgpackExpected("sparse_tokens", "a boolean", r);
      return Status::Ok();
    }
    return UnknownField(key);
  });
}

Status ParseEncodeJson(std::string& body, const ParseLimits& limits, WorkRequest* out) {
  return ParseNativeJson(body, limits, out, [&](std::string_view key, od::value v) -> Status {
    if (key == "normalize") return ReadJsonBool(v, "normalize", &out->options.normalize);
    if (key == "dimensions") return ReadJsonDimensions(v, "dimensions", &out->dense.dimensions);
    if (key == "dtype") {
      std::string_view name;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "dtype", &name));
      DenseType t;
      SHOAL_RETURN_IF_ERROR(CheckDenseType("dtype", name, &t));
      out->dense.types = {t};
      return Status::Ok();
    }
    EncodeOptions& o = out->options;
    if (key == "output") {
      std::string_view name;
      od::json_type t;
      if (v.type().get(t)) return InvalidInput("output: malformed JSON");
      if (t == od::json_type::string) {
        SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "output", &name));
        return AddOutput("output", name, &o.outputs);
      }
      size_t n = 0;
      SHOAL_RETURN_IF_ERROR(ForEachJsonString(v, "output", [&](const std::string& field, std::string_view each) {
        ++n;
        return AddOutput(field, each, &o.outputs);
      }));
      return n > 0 ? Status::Ok() : InvalidInput("output: an empty list");
    }
    if (key == "input_type") {
      std::string_view name;
      SHOAL_RETURN_IF_ERROR(ReadJsonString(v, "input_type", &name));
      return CheckInputType(name, &o.role);
    }
    if (key == "sparse_top_k") {
      int64_t n;
      if (v.get_int64().get(n)) return InvalidInput("sparse_top_k: expected a positive integer");
      return CheckSparseTopK(n, &o.sparse_top_k);
    }
    if (key == "sparse_tokens") return ReadJsonBool(v, "sparse_tokens", &o.sparse_tokens);
    return UnknownField(key);
  });
}

Status ParseOpenAiEmbeddings(std::string& body, const ParseLimits& limits, WorkRequest* out) {
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  bool has_input = false;
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "model") return ReadModel(v, out);
    if (key == "input") {
      has_input = true;
      SHOAL_RETURN_IF_ERROR(ReadOpenAiInput(v, limits, storage.get(), &pending));
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
    ItemFields f;
    SHOAL_RETURN_IF_ERROR(DecodeItem(request->items[i].payload, Task::kEncode, &f));
    if (!f.image.empty()) {  // a prompt is text: an image item stays as it is
      SHOAL_RETURN_IF_ERROR(AddItem(Field("items", i), request->items[i].cost, limits, storage.get(), &pending,
                                    [&](std::string* out) { out->append(request->items[i].payload); }));
      continue;
    }
    text.assign(prefix).append(f.text);
    SHOAL_RETURN_IF_ERROR(AddJsonText(Field("items", i), text, limits, storage.get(), &pending));
  }
  FinishItems(std::move(storage), pending, request);
  return Status::Ok();
}

WorkRequest WorkRequest::Clone() const {
  WorkRequest c;
  c.model = model;
  c.lora = lora;
  c.task = task;
  c.options = options;
  c.base64 = base64;
  c.raw_scores = raw_scores;
  c.rerank = rerank;
  c.dense = dense;
  c.extract = extract;
  c.cohere = cohere;
  size_t bytes = 0;
  for (const RequestItem& item : items) bytes += item.payload.size();
  c.storage = std::make_unique<std::string>();
  c.storage->reserve(bytes);
  for (const RequestItem& item : items) c.storage->append(item.payload);
  size_t at = 0;
  for (const RequestItem& item : items) {
    c.items.push_back({.payload = std::string_view(*c.storage).substr(at, item.payload.size()),
                       .cost = item.cost});
    at += item.payload.size();
  }
  return c;
}

}  // namespace shoal::wire
