#include "gateway/responses.h"

#include <algorithm>
#include <cmath>

#include "wire/dense_output.h"
#include "wire/json_writer.h"
#include "wire/msgpack_reader.h"
#include "wire/msgpack_writer.h"
#include "wire/transcode.h"
#include "wire/item.h"

namespace shoal::gateway {
namespace {

// Microseconds as milliseconds with three decimals ("0.512").
std::string Millis(int64_t us) {
  us = std::max<int64_t>(us, 0);
  std::string frac = std::to_string(us % 1000);
  return std::to_string(us / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

// Item i's dense vector, cut to the request's dimensions (renormalized when
// the request normalizes).
Result<std::vector<float>> DenseOf(const PendingRequest& p, size_t i) {
  std::vector<float> v;
  SHOAL_RETURN_IF_ERROR(wire::ForEachDense(p.results[i].payload, [&](float x) { v.push_back(x); }));
  SHOAL_RETURN_IF_ERROR(wire::TruncateDense(p.request.dense.dimensions, p.request.options.normalize, &v));
  return v;
}

// Item i's result map as (key, the value's MessagePack bytes): its outputs.
Result<std::vector<std::pair<std::string_view, std::string_view>>> ResultFields(const PendingRequest& p, size_t i) {
  wire::MsgpackReader r(p.results[i].payload);
  uint32_t n;
  if (!r.ReadMapHeader(&n)) return Internal("result: expected a map");
  std::vector<std::pair<std::string_view, std::string_view>> fields(n);
  for (auto& [key, raw] : fields) {
    if (!r.ReadStr(&key) || !r.ReadRaw(&raw)) return Internal("result: malformed");
  }
  return fields;
}

wire::DenseType NativeDenseType(const PendingRequest& p) {
  return p.request.dense.types.empty() ? wire::DenseType::kFloat32 : p.request.dense.types[0];
}

Result<std::string> MsgpackBody(const PendingRequest& p, uint64_t tokens) {
  std::string out;
  size_t total = 64;
  for (const auto& r : p.results) total += r.payload.size();
  out.reserve(total);
  wire::MsgpackWriter w(&out);
  w.MapHeader(3);
  w.Str("model");
  w.Str(ResponseModel(p));
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(p.results.size()));
  for (size_t i = 0; i < p.results.size(); ++i) {
    if (!p.request.dense.reshapes()) {
      w.Raw(p.results[i].payload);  // the worker's result, byte for byte
      continue;
    }
    // The dense vector reshaped; the other outputs as the worker wrote them.
    SHOAL_ASSIGN_OR_RETURN(const auto fields, ResultFields(p, i));
    w.MapHeader(static_cast<uint32_t>(fields.size()));
    for (const auto& [key, raw] : fields) {
      w.Str(key);
      if (key != "dense") {
        w.Raw(raw);
        continue;
      }
      SHOAL_ASSIGN_OR_RETURN(const std::vector<float> v, DenseOf(p, i));
      wire::WriteDenseMsgpack(v, NativeDenseType(p), &w);
    }
  }
  w.Str("usage");
  w.MapHeader(1);
  w.Str("tokens");
  w.Uint(tokens);
  return out;
}

Result<std::string> JsonBody(const PendingRequest& p, uint64_t tokens) {
  std::string out;
  wire::JsonWriter w(&out);
  w.Raw("{\"model\":");
  w.String(ResponseModel(p));
  w.Raw(",\"items\":[");
  for (size_t i = 0; i < p.results.size(); ++i) {
    if (i) w.Char(',');
    if (!p.request.dense.reshapes()) {
      SHOAL_RETURN_IF_ERROR(wire::MsgpackToJson(p.results[i].payload, &out));
      continue;
    }
    SHOAL_ASSIGN_OR_RETURN(const auto fields, ResultFields(p, i));
    w.Char('{');
    for (size_t k = 0; k < fields.size(); ++k) {
      const auto& [key, raw] = fields[k];
      if (k) w.Char(',');
      w.String(key);
      w.Char(':');
      if (key != "dense") {
        SHOAL_RETURN_IF_ERROR(wire::MsgpackToJson(raw, &out));
        continue;
      }
      SHOAL_ASSIGN_OR_RETURN(const std::vector<float> v, DenseOf(p, i));
      wire::WriteDenseJson(v, NativeDenseType(p), &w);
    }
    w.Char('}');
  }
  w.Raw("],\"usage\":{\"tokens\":");
  w.Int(static_cast<int64_t>(tokens));
  w.Raw("}}");
  return out;
}

Result<std::string> OpenAiBody(const PendingRequest& p, uint64_t tokens) {
  std::string out;
  wire::JsonWriter w(&out);
  w.Raw("{\"object\":\"list\",\"data\":[");
  for (size_t i = 0; i < p.results.size(); ++i) {
    if (i) w.Char(',');
    w.Raw("{\"object\":\"embedding\",\"index\":");
    w.Int(static_cast<int64_t>(i));
    w.Raw(",\"embedding\":");
    auto dense = DenseOf(p, i);
    if (!dense.ok()) return dense.status();
    const std::vector<float>& v = *dense;
    if (p.request.base64) {
      // Little-endian float32 bytes, as OpenAI's base64 encoding_format.
      out.push_back('"');
      wire::AppendBase64({reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)}, &out);
      out.push_back('"');
    } else {
      w.Char('[');
      for (size_t k = 0; k < v.size(); ++k) {
        if (k) w.Char(',');
        w.Float(v[k]);
      }
      w.Char(']');
    }
    w.Char('}');
  }
  w.Raw("],\"model\":");
  w.String(ResponseModel(p));
  w.Raw(",\"usage\":{\"prompt_tokens\":");
  w.Int(static_cast<int64_t>(tokens));
  w.Raw(",\"total_tokens\":");
  w.Int(static_cast<int64_t>(tokens));
  w.Raw("}}");
  return out;
}

// Cohere's embed response: v1 with a list of float vectors, or (v1 with
// embedding_types, and v2) vectors keyed by type.
Result<std::string> CohereEmbedBody(const PendingRequest& p, uint64_t tokens) {
  const wire::CohereEmbedOptions& c = p.request.cohere;
  std::vector<std::vector<float>> vectors;
  for (size_t i = 0; i < p.results.size(); ++i) {
    auto v = DenseOf(p, i);
    if (!v.ok()) return v.status();
    vectors.push_back(std::move(v).value());
  }
  auto list = [&](wire::DenseType t, wire::JsonWriter& w) {
    w.Char('[');
    for (size_t i = 0; i < vectors.size(); ++i) {
      if (i) w.Char(',');
      wire::WriteDenseJson(vectors[i], t, &w);
    }
    w.Char(']');
  };
  std::string out;
  wire::JsonWriter w(&out);
  w.Raw("{\"id\":");
  w.String(p.id);
  w.Raw(",\"texts\":[");
  for (size_t i = 0; i < c.texts.size(); ++i) {
    if (i) w.Char(',');
    w.String(c.texts[i]);
  }
  w.Raw("],\"embeddings\":");
  if (c.version == 1 && !c.by_type) {
    list(wire::DenseType::kFloat32, w);
  } else {
    w.Char('{');
    for (size_t k = 0; k < p.request.dense.types.size(); ++k) {
      const wire::DenseType t = p.request.dense.types[k];
      if (k) w.Char(',');
      w.String(t == wire::DenseType::kFloat32 ? "float" : wire::DenseTypeName(t));
      w.Char(':');
      list(t, w);
    }
    w.Char('}');
  }
  w.Raw(",\"meta\":{\"api_version\":{\"version\":\"");
  w.Int(c.version);
  w.Raw("\"},\"billed_units\":{\"input_tokens\":");
  w.Int(static_cast<int64_t>(tokens));
  w.Raw("}}");
  if (c.version == 1) w.Raw(c.by_type ? ",\"response_type\":\"embeddings_by_type\"" : ",\"response_type\":\"embeddings_floats\"");
  w.Char('}');
  return out;
}

// A pair's relevance: the first logit, through a sigmoid unless the caller
// asked for raw logits (sentence-transformers' CrossEncoder default) — or,
// for CLIP, a softmax over the request's pairs (what its zero-shot
// classification gives: its logits mean something only against each other).
Result<std::vector<float>> Scores(const PendingRequest& p) {
  std::vector<float> scores;
  scores.reserve(p.results.size());
  for (const auto& r : p.results) {
    bool first = true;
    SHOAL_RETURN_IF_ERROR(wire::ForEachFloat(r.payload, "logits", [&](float x) {
      if (first) scores.push_back(x);
      first = false;
    }));
    if (first) return Internal("result: no logits");
  }
  if (p.request.raw_scores) return scores;
  if (p.model->image_text_score == ImageTextScore::kSoftmax && !scores.empty()) {
    const float mx = *std::max_element(scores.begin(), scores.end());
    double sum = 0;
    for (float& s : scores) sum += (s = std::exp(s - mx));
    for (float& s : scores) s = static_cast<float>(s / sum);
    return scores;
  }
  for (float& s : scores) s = 1.0f / (1.0f + std::exp(-s));
  return scores;
}

Result<std::string> ScoreBody(const PendingRequest& p, uint64_t tokens) {
  auto scores = Scores(p);
  if (!scores.ok()) return scores.status();
  std::string out;
  wire::JsonWriter w(&out);
  w.Raw("{\"model\":");
  w.String(ResponseModel(p));
  w.Raw(",\"scores\":[");
  for (size_t i = 0; i < scores->size(); ++i) {
    if (i) w.Char(',');
    w.Float((*scores)[i]);
  }
  w.Raw("],\"usage\":{\"tokens\":");
  w.Int(static_cast<int64_t>(tokens));
  w.Raw("}}");
  return out;
}

// Cohere's rerank response: documents by descending relevance, each with its
// index in the request (and the caller's id, when the document had one).
Result<std::string> RerankBody(const PendingRequest& p, uint64_t tokens) {
  auto scores = Scores(p);
  if (!scores.ok()) return scores.status();
  const wire::RerankOptions& o = p.request.rerank;
  std::vector<size_t> order(scores->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return (*scores)[a] > (*scores)[b]; });
  if (o.top_n > 0 && o.top_n < order.size()) order.resize(o.top_n);
  std::string out;
  wire::JsonWriter w(&out);
  w.Raw("{\"id\":");
  w.String(p.id);
  w.Raw(",\"results\":[");
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    if (k) w.Char(',');
    w.Raw("{\"index\":");
    w.Int(static_cast<int64_t>(i));
    if (i < o.ids.size() && !o.ids[i].empty()) {
      w.Raw(",\"id\":");
      w.Raw(o.ids[i]);  // the caller's JSON token, as sent
    }
    w.Raw(",\"relevance_score\":");
    w.Float((*scores)[i]);
    if (o.return_documents && i < o.texts.size()) {
      w.Raw(",\"document\":{\"text\":");
      w.String(o.texts[i]);
      w.Char('}');
    }
    w.Char('}');
  }
  w.Raw("],\"model\":");
  w.String(ResponseModel(p));
  w.Raw(p.request.cohere.version == 2 ? ",\"meta\":{\"api_version\":{\"version\":\"2\"},"
                                      : ",\"meta\":{\"api_version\":{\"version\":\"1\"},");
  w.Raw("\"billed_units\":{\"search_units\":1},"
        "\"tokens\":{\"input_tokens\":");
  w.Int(static_cast<int64_t>(tokens));
  w.Raw("}}}");
  return out;
}

// TEI's tokenize response: one array of tokens per input.
Result<std::string> TokenizeBody(const PendingRequest& p) {
  std::string out = "[";
  for (size_t i = 0; i < p.results.size(); ++i) {
    if (i) out.push_back(',');
    wire::MsgpackReader r(p.results[i].payload);
    uint32_t fields = 0;
    std::string_view key, tokens;
    if (!r.ReadMapHeader(&fields) || fields != 1 || !r.ReadStr(&key) || key != "tokens" ||
        !r.ReadRaw(&tokens)) {
      return Internal("result: no tokens");
    }
    SHOAL_RETURN_IF_ERROR(wire::MsgpackToJson(tokens, &out));
  }
  out.push_back(']');
  return out;
}

}  // namespace

http::Response ItemErrorResponse(const PendingRequest& p, size_t index, const Status& error) {
  if (p.request.items.size() <= 1) return http::ErrorResponse(error, p.id);
  return http::ErrorResponse(Status(error.code(), "items[" + std::to_string(index) + "]: " + error.message()),
                       p.id);
}

http::Response ComposeResponse(const PendingRequest& p) {
  uint64_t tokens = 0, truncated = 0;
  bool cold_start = false;
  int64_t queue_us = 0, inference_us = 0;
  uint32_t attempts = 1;
  for (const auto& r : p.results) {
    tokens += r.tokens;
    truncated += r.truncated;
    cold_start = cold_start || r.cold_start;
    attempts = std::max(attempts, r.attempt);
    queue_us = std::max(queue_us, r.queue_us);
    inference_us = std::max(inference_us, r.inference_us);
  }
  Result<std::string> body = Internal("unknown format");
  http::Response res;
  switch (p.format) {
    case ResponseFormat::kMsgpack:
      body = MsgpackBody(p, tokens);
      res.content_type = "application/msgpack";
      break;
    case ResponseFormat::kJson: body = JsonBody(p, tokens); break;
    case ResponseFormat::kOpenAi: body = OpenAiBody(p, tokens); break;
    case ResponseFormat::kCohereEmbed: body = CohereEmbedBody(p, tokens); break;
    case ResponseFormat::kScore: body = ScoreBody(p, tokens); break;
    case ResponseFormat::kRerank: body = RerankBody(p, tokens); break;
    case ResponseFormat::kTokenize: body = TokenizeBody(p); break;
  }
  if (body.ok() && p.msgpack_response) {
    std::string packed;
    const Status s = wire::JsonToMsgpack(*body, &packed);
    body = s.ok() ? Result<std::string>(std::move(packed)) : Result<std::string>(s);
    res.content_type = "application/msgpack";
  }
  if (!body.ok()) return http::ErrorResponse(body.status(), p.id);
  res.body = std::move(body).value();
  res.headers.emplace_back("X-Shoal-Request-Id", p.id);
  res.headers.emplace_back("X-Shoal-Queue-Ms", Millis(queue_us));
  res.headers.emplace_back("X-Shoal-Inference-Ms", Millis(inference_us));
  res.headers.emplace_back("X-Shoal-Total-Ms", Millis(MicrosSince(p.received)));
  // Above 1 when a worker failed mid-batch and another ran the item again.
  res.headers.emplace_back("X-Shoal-Attempts", std::to_string(attempts));
  // How many inputs were cut to the model's limit (only ever when asked).
  res.headers.emplace_back("X-Shoal-Truncated", std::to_string(truncated));
  // 1 when some item waited for its model to be loaded (residency).
  res.headers.emplace_back("X-Shoal-Cold-Start", cold_start ? "1" : "0");
  AddModelVersionHeader(p, &res);
  return res;
}

}  // namespace shoal::gateway
