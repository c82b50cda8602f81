// The canonical JSON of generate.h. Written by hand with JsonWriter (fixed
// field order, floats in shortest round-trip form, every field present) and
// read with nlohmann-json (generate_json.h). Readers ignore fields they do
// not know, so a newer writer can add one without breaking an older reader.
//
// Work:  {"kind":"chat"|"completion","model":str,
//         "prompt":str                                         (completion)
//         "messages":[{"role","content"}],"add_generation_prompt":bool,
//         "chat_template_kwargs":{...}|null                    (chat)
//         "sampling":{"max_tokens","temperature","top_p","top_k","seed":int|null,
//                     "stop":[str],"stop_token_ids":[int],"ignore_eos","logprobs"},
//         "stream":bool,"include_usage":bool}
// Chunk: {"text":str,"token_ids":[int],"logprobs":[float|null],
//         "finish_reason":null|"stop"|"length",
//         "usage":{"prompt_tokens","completion_tokens","cached_prompt_tokens"},
//         "timing":{"ttft_ms","itl_ms","queue_ms"}}
#include "wire/generate.h"

#include <cmath>
#include <limits>

#include "wire/generate_json.h"
#include "wire/json_writer.h"

namespace shoal::wire {
namespace {

using gen::Json;

void StringArray(JsonWriter& w, const std::vector<std::string>& v) {
  w.Char('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) w.Char(',');
    w.String(v[i]);
  }
  w.Char(']');
}

template <class Ints>
void IntArray(JsonWriter& w, const Ints& v) {
  w.Char('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) w.Char(',');
    w.Int(v[i]);
  }
  w.Char(']');
}

// Calls `read(value)` for `key` of `obj` when it is there and not null.
template <class Read>
Status Optional(const Json& obj, const char* key, Read&& read) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  return read(*it);
}

Status ReadFloat(const Json& v, const char* field, float* out) {
  double d = 0;
  SHOAL_RETURN_IF_ERROR(gen::ReadNumber(v, field, &d));
  *out = static_cast<float>(d);
  return Status::Ok();
}

Status ReadU32(const Json& v, const char* field, uint32_t* out) {
  int64_t x = 0;
  SHOAL_RETURN_IF_ERROR(gen::ReadInt(v, field, 0, std::numeric_limits<uint32_t>::max(), &x));
  *out = static_cast<uint32_t>(x);
  return Status::Ok();
}

Status ReadMillis(const Json& v, const char* field, double* out) {
  SHOAL_RETURN_IF_ERROR(gen::ReadNumber(v, field, out));
  if (!(*out >= 0)) return InvalidInput(std::string(field) + ": must be at least 0");
  return Status::Ok();
}

Status DecodeSampling(const Json& j, SamplingParams* s) {
  if (!j.is_object()) return gen::Expected("sampling", "an object", j);
  SHOAL_RETURN_IF_ERROR(Optional(
      j, "max_tokens", [&](const Json& v) { return ReadU32(v, "max_tokens", &s->max_tokens); }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "temperature", [&](const Json& v) {
    return ReadFloat(v, "temperature", &s->temperature);
  }));
  SHOAL_RETURN_IF_ERROR(
      Optional(j, "top_p", [&](const Json& v) { return ReadFloat(v, "top_p", &s->top_p); }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "top_k", [&](const Json& v) {
    int64_t k = 0;
    SHOAL_RETURN_IF_ERROR(gen::ReadInt(v, "top_k", 0, std::numeric_limits<int32_t>::max(), &k));
    s->top_k = static_cast<int32_t>(k);
    return Status::Ok();
  }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "seed", [&](const Json& v) {
    uint64_t seed = 0;
    SHOAL_RETURN_IF_ERROR(gen::ReadSeed(v, "seed", &seed));
    s->seed = seed;
    return Status::Ok();
  }));
  SHOAL_RETURN_IF_ERROR(
      Optional(j, "stop", [&](const Json& v) { return gen::ReadStop(v, "stop", &s->stop); }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "stop_token_ids", [&](const Json& v) {
    return gen::ReadTokenIds(v, "stop_token_ids", &s->stop_token_ids);
  }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "ignore_eos", [&](const Json& v) {
    return gen::ReadBool(v, "ignore_eos", &s->ignore_eos);
  }));
  return Optional(j, "logprobs",
                  [&](const Json& v) { return gen::ReadBool(v, "logprobs", &s->logprobs); });
}

}  // namespace

std::string EncodeGenerateWork(const GenerateRequest& r) {
  std::string out;
  out.reserve(256 + r.prompt.size() + r.chat_template_kwargs_json.size());
  JsonWriter w(&out);
  const bool chat = r.kind == GenerateRequest::Kind::kChat;
  w.Raw(chat ? "{\"kind\":\"chat\",\"model\":" : "{\"kind\":\"completion\",\"model\":");
  w.String(r.model);
  if (chat) {
    w.Raw(",\"messages\":[");
    for (size_t i = 0; i < r.messages.size(); ++i) {
      if (i) w.Char(',');
      w.Raw("{\"role\":");
      w.String(r.messages[i].role);
      w.Raw(",\"content\":");
      w.String(r.messages[i].content);
      w.Char('}');
    }
    w.Raw("],\"add_generation_prompt\":");
    w.Bool(r.add_generation_prompt);
    w.Raw(",\"chat_template_kwargs\":");
    // Already JSON: the parsers produced it from a parsed object.
    r.chat_template_kwargs_json.empty() ? w.Null() : w.Raw(r.chat_template_kwargs_json);
  } else {
    w.Raw(",\"prompt\":");
    w.String(r.prompt);
  }
  const SamplingParams& s = r.sampling;
  w.Raw(",\"sampling\":{\"max_tokens\":");
  w.Int(s.max_tokens);
  w.Raw(",\"temperature\":");
  w.Float(s.temperature);
  w.Raw(",\"top_p\":");
  w.Float(s.top_p);
  w.Raw(",\"top_k\":");
  w.Int(s.top_k);
  w.Raw(",\"seed\":");
  if (s.seed) {
    out += std::to_string(*s.seed);
  } else {
    w.Null();
  }
  w.Raw(",\"stop\":");
  StringArray(w, s.stop);
  w.Raw(",\"stop_token_ids\":");
  IntArray(w, s.stop_token_ids);
  w.Raw(",\"ignore_eos\":");
  w.Bool(s.ignore_eos);
  w.Raw(",\"logprobs\":");
  w.Bool(s.logprobs);
  w.Raw("},\"stream\":");
  w.Bool(r.stream);
  w.Raw(",\"include_usage\":");
  w.Bool(r.include_usage);
  w.Char('}');
  return out;
}

Status DecodeGenerateWork(std::string_view json, GenerateRequest* r) {
  Json j;
  SHOAL_RETURN_IF_ERROR(gen::ParseObject(json, "generate work", &j));
  *r = GenerateRequest{};
  std::string kind;
  auto k = j.find("kind");
  if (k == j.end()) return InvalidInput("kind: missing");
  SHOAL_RETURN_IF_ERROR(gen::ReadString(*k, "kind", &kind));
  if (kind == "chat") {
    r->kind = GenerateRequest::Kind::kChat;
  } else if (kind != "completion") {
    return InvalidInput("kind: expected \"chat\" or \"completion\", got \"" + kind + "\"");
  }
  // Each kind carries only its own fields (what EncodeGenerateWork writes):
  // a message that mixes them is not one a gateway sent.
  const bool chat = r->kind == GenerateRequest::Kind::kChat;
  for (const char* field : {"messages", "add_generation_prompt", "chat_template_kwargs", "prompt"}) {
    const bool chat_field = std::string_view(field) != "prompt";
    if (chat_field != chat && j.find(field) != j.end()) {
      return InvalidInput(std::string(field) + ": not a field of a " + kind + " request");
    }
  }
  SHOAL_RETURN_IF_ERROR(
      Optional(j, "model", [&](const Json& v) { return gen::ReadString(v, "model", &r->model); }));
  SHOAL_RETURN_IF_ERROR(Optional(
      j, "prompt", [&](const Json& v) { return gen::ReadString(v, "prompt", &r->prompt); }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "messages", [&](const Json& v) {
    return gen::ReadMessages(v, "messages", &r->messages);
  }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "add_generation_prompt", [&](const Json& v) {
    return gen::ReadBool(v, "add_generation_prompt", &r->add_generation_prompt);
  }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "chat_template_kwargs", [&](const Json& v) {
    return gen::ReadObjectText(v, "chat_template_kwargs", &r->chat_template_kwargs_json);
  }));
  SHOAL_RETURN_IF_ERROR(
      Optional(j, "sampling", [&](const Json& v) { return DecodeSampling(v, &r->sampling); }));
  SHOAL_RETURN_IF_ERROR(
      Optional(j, "stream", [&](const Json& v) { return gen::ReadBool(v, "stream", &r->stream); }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "include_usage", [&](const Json& v) {
    return gen::ReadBool(v, "include_usage", &r->include_usage);
  }));
  return gen::Validate(*r);
}

std::string_view FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone:
      return "";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
  }
  return "";
}

std::string EncodeChunk(const GenerationChunk& c) {
  std::string out;
  out.reserve(192 + c.text.size() + c.token_ids.size() * 8 + c.logprobs.size() * 12);
  JsonWriter w(&out);
  w.Raw("{\"text\":");
  w.String(c.text);
  w.Raw(",\"token_ids\":");
  IntArray(w, c.token_ids);
  w.Raw(",\"logprobs\":[");
  for (size_t i = 0; i < c.logprobs.size(); ++i) {
    if (i) w.Char(',');
    w.Float(c.logprobs[i]);  // -inf (a token of probability 0) prints as null
  }
  w.Raw("],\"finish_reason\":");
  if (c.finish == FinishReason::kNone) {
    w.Null();
  } else {
    w.String(FinishReasonName(c.finish));
  }
  w.Raw(",\"usage\":{\"prompt_tokens\":");
  w.Int(c.prompt_tokens);
  w.Raw(",\"completion_tokens\":");
  w.Int(c.completion_tokens);
  w.Raw(",\"cached_prompt_tokens\":");
  w.Int(c.cached_prompt_tokens);
  w.Raw("},\"timing\":{\"ttft_ms\":");
  w.Double(c.ttft_ms);
  w.Raw(",\"itl_ms\":");
  w.Double(c.itl_ms);
  w.Raw(",\"queue_ms\":");
  w.Double(c.queue_ms);
  w.Raw("}}");
  return out;
}

Status DecodeChunk(std::string_view json, GenerationChunk* c) {
  Json j;
  SHOAL_RETURN_IF_ERROR(gen::ParseObject(json, "chunk", &j));
  *c = GenerationChunk{};
  SHOAL_RETURN_IF_ERROR(
      Optional(j, "text", [&](const Json& v) { return gen::ReadString(v, "text", &c->text); }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "token_ids", [&](const Json& v) {
    return gen::ReadTokenIds(v, "token_ids", &c->token_ids);
  }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "logprobs", [&](const Json& v) {
    if (!v.is_array()) return gen::Expected("logprobs", "an array", v);
    for (const Json& x : v) {
      if (x.is_null()) {
        c->logprobs.push_back(-std::numeric_limits<float>::infinity());
        continue;
      }
      float f = 0;
      SHOAL_RETURN_IF_ERROR(ReadFloat(x, "logprobs[]", &f));
      c->logprobs.push_back(f);
    }
    return Status::Ok();
  }));
  if (!c->logprobs.empty() && c->logprobs.size() != c->token_ids.size()) {
    return InvalidInput("logprobs: " + std::to_string(c->logprobs.size()) + " values for " +
                        std::to_string(c->token_ids.size()) + " tokens");
  }
  SHOAL_RETURN_IF_ERROR(Optional(j, "finish_reason", [&](const Json& v) {
    std::string name;
    SHOAL_RETURN_IF_ERROR(gen::ReadString(v, "finish_reason", &name));
    if (name == "stop") {
      c->finish = FinishReason::kStop;
    } else if (name == "length") {
      c->finish = FinishReason::kLength;
    } else if (!name.empty()) {
      return InvalidInput("finish_reason: unknown '" + name + "'");
    }
    return Status::Ok();
  }));
  SHOAL_RETURN_IF_ERROR(Optional(j, "usage", [&](const Json& u) {
    if (!u.is_object()) return gen::Expected("usage", "an object", u);
    SHOAL_RETURN_IF_ERROR(Optional(u, "prompt_tokens", [&](const Json& v) {
      return ReadU32(v, "usage.prompt_tokens", &c->prompt_tokens);
    }));
    SHOAL_RETURN_IF_ERROR(Optional(u, "completion_tokens", [&](const Json& v) {
      return ReadU32(v, "usage.completion_tokens", &c->completion_tokens);
    }));
    return Optional(u, "cached_prompt_tokens", [&](const Json& v) {
      return ReadU32(v, "usage.cached_prompt_tokens", &c->cached_prompt_tokens);
    });
  }));
  return Optional(j, "timing", [&](const Json& t) {
    if (!t.is_object()) return gen::Expected("timing", "an object", t);
    SHOAL_RETURN_IF_ERROR(Optional(
        t, "ttft_ms", [&](const Json& v) { return ReadMillis(v, "timing.ttft_ms", &c->ttft_ms); }));
    SHOAL_RETURN_IF_ERROR(Optional(
        t, "itl_ms", [&](const Json& v) { return ReadMillis(v, "timing.itl_ms", &c->itl_ms); }));
    return Optional(t, "queue_ms",
                    [&](const Json& v) { return ReadMillis(v, "timing.queue_ms", &c->queue_ms); });
  });
}

}  // namespace shoal::wire
