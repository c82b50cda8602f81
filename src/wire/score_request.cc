#include "wire/score_request.h"

#include "wire/request_json.h"
#include "wire/item.h"

namespace shoal::wire {
namespace {

// The pairs of a score or rerank request, collected while parsing (the
// fields may come in any order), then turned into items. Views point into
// the JSON parser's buffer, valid until the thread's next parse.
// An image–text model's pairs have an image on one side: the query's
// (scored against each text) or each candidate's (against the text query).
struct Pairs {
  std::string_view query;
  std::string query_image;  // the query's bytes, when it is an image
  bool has_query = false;
  std::vector<std::string_view> texts;
  std::vector<std::string> images;  // instead of texts: their bytes
  bool has_images = false;
  const char* texts_field = "texts";
};

// "query": a text; where images may be scored, also {"image": base64}.
Status ReadQuery(od::value v, bool images, Pairs* pairs) {
  pairs->has_query = true;
  od::json_type t;
  if (v.type().get(t)) return InvalidInput("query: malformed JSON");
  if (!images || t != od::json_type::object) return ReadJsonString(v, "query", &pairs->query);
  od::object obj;
  if (auto e = v.get_object().get(obj)) return JsonMalformed(e);
  for (auto f_result : obj) {
    od::field f;
    if (auto e = std::move(f_result).get(f)) return JsonMalformed(e);
    std::string_view k;
    if (auto e = f.unescaped_key().get(k)) return JsonMalformed(e);
    if (k != "image") return InvalidInput("query: unknown field '" + std::string(k) + "' (a query is a text or {\"image\": ...})");
    std::string_view text;
    SHOAL_RETURN_IF_ERROR(ReadJsonString(f.value(), "query.image", &text));
    SHOAL_RETURN_IF_ERROR(DecodeJsonImage("query.image", text, &pairs->query_image));
  }
  if (pairs->query_image.empty()) return InvalidInput("query.image: missing");
  return Status::Ok();
}

Status MakePairItems(const Pairs& pairs, const ParseLimits& limits, WorkRequest* out) {
  if (!pairs.has_query) return InvalidInput("query: missing");
  if (pairs.has_images && !pairs.query_image.empty()) {
    return InvalidInput("images: an image query is scored against texts, not images");
  }
  const char* field = pairs.has_images ? "images" : pairs.texts_field;
  const size_t n = pairs.has_images ? pairs.images.size() : pairs.texts.size();
  SHOAL_RETURN_IF_ERROR(CheckItemCount(field, n, limits));
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  for (size_t i = 0; i < n; ++i) {
    if (pairs.has_images) {
      SHOAL_RETURN_IF_ERROR(AddItem(Field(field, i), EstimateTokens(pairs.query.size()) + kImageItemCost, limits,
                                    storage.get(), &pending, [&](std::string* s) {
                                      AppendTextImageItem(pairs.query, pairs.images[i], s);
                                    }));
    } else if (!pairs.query_image.empty()) {
      SHOAL_RETURN_IF_ERROR(AddItem(Field(field, i), EstimateTokens(pairs.texts[i].size()) + kImageItemCost, limits,
                                    storage.get(), &pending, [&](std::string* s) {
                                      AppendTextImageItem(pairs.texts[i], pairs.query_image, s);
                                    }));
    } else {
      const std::string_view text = pairs.texts[i];
      SHOAL_RETURN_IF_ERROR(AddItem(Field(field, i), EstimateTokens(pairs.query.size() + text.size()), limits,
                                    storage.get(), &pending, [&](std::string* s) {
                                      AppendPairItem(pairs.query, text, s);
                                    }));
    }
  }
  FinishItems(std::move(storage), pending, out);
  out->task = Task::kScore;
  return Status::Ok();
}

// A rerank document: a string, or an object with "text" and an optional
// "id" (string or number) that the response echoes; other fields are the
// caller's and ignored.
Status ReadDocument(od::value el, size_t i, Pairs* pairs, RerankOptions* rerank) {
  const std::string field = Field("documents", i);
  od::json_type t;
  if (el.type().get(t)) return InvalidInput(field + ": malformed JSON");
  std::string id;
  std::string_view text;
  if (t == od::json_type::string) {
    SHOAL_RETURN_IF_ERROR(ReadJsonString(el, field, &text));
  } else if (t == od::json_type::object) {
    od::object obj;
    if (auto e = el.get_object().get(obj)) return JsonMalformed(e);
    bool has_text = false;
    for (auto f_result : obj) {
      od::field f;
      if (auto e = std::move(f_result).get(f)) return JsonMalformed(e);
      std::string_view k;
      if (auto e = f.unescaped_key().get(k)) return JsonMalformed(e);
      od::value v = f.value();
      if (k == "text") {
        SHOAL_RETURN_IF_ERROR(ReadJsonString(v, field + ".text", &text));
        has_text = true;
      } else if (k == "id") {
        od::json_type it;
        if (v.type().get(it)) return InvalidInput(field + ".id: malformed JSON");
        if (it != od::json_type::string && it != od::json_type::number) {
          return JsonExpected(field + ".id", "a string or a number", v);
        }
        id = std::string(v.raw_json_token());  // echoed verbatim, quotes and all
      }
    }
    if (!has_text) return InvalidInput(field + ".text: missing");
  } else {
    return JsonExpected(field, "a string or an object with \"text\"", el);
  }
  pairs->texts.push_back(text);
  rerank->ids.push_back(std::move(id));
  return Status::Ok();
}

}  // namespace

Status ParseScoreJson(std::string& body, const ParseLimits& limits, WorkRequest* out) {
  Pairs pairs;
  bool has_texts = false;
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "query") return ReadQuery(v, /*images=*/true, &pairs);
    if (key == "texts") {
      has_texts = true;
      return ForEachJsonText(v, "texts", [&](const std::string&, std::string_view text) {
        pairs.texts.push_back(text);
        return Status::Ok();
      });
    }
    if (key == "images") {
      pairs.has_images = true;
      return ForEachJsonText(v, "images", [&](const std::string& field, std::string_view text) {
        if (pairs.images.size() >= limits.max_items) return CheckItemCount("images", pairs.images.size() + 1, limits);
        return DecodeJsonImage(field, text, &pairs.images.emplace_back());
      });
    }
    if (key == "truncate") return ReadJsonBool(v, "truncate", &out->options.truncate);
    if (key == "raw_scores") return ReadJsonBool(v, "raw_scores", &out->raw_scores);
    if (key == "lora") return ReadLora(v, out);
    return InvalidInput("body: unknown field '" + std::string(key) + "'");
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (has_texts == pairs.has_images) {
    return InvalidInput(has_texts ? "texts and images: send one of them" : "texts: missing");
  }
  return MakePairItems(pairs, limits, out);
}

Status ParseRerankJson(std::string& body, const ParseLimits& limits, WorkRequest* out) {
  Pairs pairs;
  pairs.texts_field = "documents";
  bool has_documents = false;
  int64_t top_n = 0;
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "model") return ReadModel(v, out);
    if (key == "query") return ReadQuery(v, /*images=*/false, &pairs);
    if (key == "documents") {
      has_documents = true;
      od::array arr;
      if (v.get_array().get(arr)) return JsonExpected("documents", "an array", v);
      size_t i = 0;
      for (auto el_result : arr) {
        od::value el;
        if (auto e = std::move(el_result).get(el)) return JsonMalformed(e);
        SHOAL_RETURN_IF_ERROR(ReadDocument(el, i++, &pairs, &out->rerank));
        if (i > limits.max_items) return CheckItemCount("documents", i, limits);
      }
      return Status::Ok();
    }
    if (key == "top_n") {
      if (v.get_int64().get(top_n) || top_n < 1) return InvalidInput("top_n: expected a positive integer");
      return Status::Ok();
    }
    if (key == "return_documents") return ReadJsonBool(v, "return_documents", &out->rerank.return_documents);
    if (key == "truncate") return ReadJsonBool(v, "truncate", &out->options.truncate);
    if (key == "raw_scores") return ReadJsonBool(v, "raw_scores", &out->raw_scores);
    if (key == "rank_fields" || key == "max_chunks_per_doc") {
      return InvalidInput(std::string(key) + ": not supported; send the text to rank in documents[].text");
    }
    return InvalidInput("body: unknown field '" + std::string(key) + "'");
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (out->model.empty()) return InvalidInput("model: missing");
  if (!has_documents) return InvalidInput("documents: missing");
  out->rerank.top_n = static_cast<size_t>(top_n);
  if (out->rerank.return_documents) {
    out->rerank.texts.assign(pairs.texts.begin(), pairs.texts.end());
  }
  return MakePairItems(pairs, limits, out);
}

Status ParseTokenizeJson(std::string& body, const ParseLimits& limits, WorkRequest* out) {
  std::vector<std::string_view> inputs;
  bool has_inputs = false, add_special_tokens = true;
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "inputs") {
      has_inputs = true;
      return ForEachJsonText(v, "inputs", [&](const std::string&, std::string_view text) {
        inputs.push_back(text);
        return Status::Ok();
      });
    }
    if (key == "add_special_tokens") return ReadJsonBool(v, "add_special_tokens", &add_special_tokens);
    if (key == "lora") return ReadLora(v, out);
    return InvalidInput("body: unknown field '" + std::string(key) + "'");
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (!has_inputs) return InvalidInput("inputs: missing");
  SHOAL_RETURN_IF_ERROR(CheckItemCount("inputs", inputs.size(), limits));
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  for (size_t i = 0; i < inputs.size(); ++i) {
    SHOAL_RETURN_IF_ERROR(AddItem(Field("inputs", i), EstimateTokens(inputs[i].size()), limits, storage.get(),
                                  &pending, [&](std::string* st) {
                                    AppendTokenizeItem(inputs[i], add_special_tokens, st);
                                  }));
  }
  FinishItems(std::move(storage), pending, out);
  out->task = Task::kTokenize;
  return Status::Ok();
}

}  // namespace shoal::wire
