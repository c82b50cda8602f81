// The MessagePack forms of generate.h. Readers skip fields they do not
// know, so a newer writer can add one without breaking an older reader.
//
// Work:  {"kind": "chat" | "completion", "model": str,
//         "prompt": str                                         (completion)
//         "messages": [{"role", "content"}], "add_generation_prompt": bool,
//         "chat_template_kwargs": str (a JSON object's text)      (chat; absent: none)
//         "sampling": {"max_tokens", "temperature", "top_p", "top_k",
//                      "seed" (absent: none), "stop": [str], "stop_token_ids": [int],
//                      "ignore_eos", "logprobs", and where set: "presence_penalty",
//                      "frequency_penalty", "repetition_penalty", "min_tokens",
//                      "logit_bias": [[id, bias]], "unsaid": SamplingDefault bits},
//         "response_format": {"type": "json_object" | "json_schema" | "regex" | "choice",
//                             "name": str, "schema": str       (json_schema)
//                             "pattern": str                   (regex)
//                             "choices": [str]}                (choice; absent: text)
//         "tools": str (a JSON array), "tool_choice": "auto" | "none" | "required" |
//                  "function:<name>", "parallel_tool_calls": bool (with tools only)
//         "stream": bool, "include_usage": bool}
// A message may add "tool_calls": [[id, name, arguments]] and "tool_call_id".
// Chunk: {"text": str, "token_ids": [int], "logprobs": [float32 | nil] (when asked),
//         and on the last: "finish_reason": "stop" | "length" | "tool_calls",
//         "tool_calls": [[id, name, arguments]] (with tool_calls), "prompt_tokens",
//         "completion_tokens", "cached_prompt_tokens", "ttft_ms", "itl_ms", "queue_ms"}
#include "wire/generate.h"

#include <cmath>
#include <limits>

#include "wire/generate_json.h"
#include "wire/msgpack_fields.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {
namespace {

void Strings(MsgpackWriter& w, const std::vector<std::string>& v) {
  w.ArrayHeader(static_cast<uint32_t>(v.size()));
  for (const std::string& x : v) w.Str(x);
}

void AppendSampling(const SamplingParams& s, MsgpackWriter& w) {
  // The logit adjustments only where they change something: most requests
  // carry none.
  const bool presence = s.presence_penalty != 0, frequency = s.frequency_penalty != 0,
             repetition = s.repetition_penalty != 1, bias = !s.logit_bias.empty(), min_tokens = s.min_tokens > 0,
             top = s.top_logprobs > 0, unsaid = s.unsaid != 0;
  w.MapHeader(8 + s.seed.has_value() + presence + frequency + repetition + bias + min_tokens + top + unsaid);
  if (unsaid) {
    w.Str("unsaid");
    w.Uint(s.unsaid);
  }
  if (top) {
    w.Str("top_logprobs");
    w.Uint(s.top_logprobs);
  }
  if (presence) {
    w.Str("presence_penalty");
    w.Float32(s.presence_penalty);
  }
  if (frequency) {
    w.Str("frequency_penalty");
    w.Float32(s.frequency_penalty);
  }
  if (repetition) {
    w.Str("repetition_penalty");
    w.Float32(s.repetition_penalty);
  }
  if (bias) {  // [[id, bias], ...]
    w.Str("logit_bias");
    w.ArrayHeader(static_cast<uint32_t>(s.logit_bias.size()));
    for (auto [id, b] : s.logit_bias) {
      w.ArrayHeader(2);
      w.Int(id);
      w.Float32(b);
    }
  }
  if (min_tokens) {
    w.Str("min_tokens");
    w.Uint(s.min_tokens);
  }
  w.Str("max_tokens");
  w.Uint(s.max_tokens);
  w.Str("temperature");
  w.Float32(s.temperature);
  w.Str("top_p");
  w.Float32(s.top_p);
  w.Str("top_k");
  w.Int(s.top_k);
  if (s.seed) {
    w.Str("seed");
    w.Uint(*s.seed);
  }
  w.Str("stop");
  Strings(w, s.stop);
  w.Str("stop_token_ids");
  w.ArrayHeader(static_cast<uint32_t>(s.stop_token_ids.size()));
  for (int32_t id : s.stop_token_ids) w.Int(id);
  w.Str("ignore_eos");
  w.Bool(s.ignore_eos);
  w.Str("logprobs");
  w.Bool(s.logprobs);
}

Status ReadSampling(MsgpackReader& r, SamplingParams* s) {
  MsgpackFields f(r, "sampling");
  return f.ForEach([&](std::string_view key) -> Status {
    if (key == "max_tokens") return f.Int(&s->max_tokens);
    if (key == "temperature") return f.Float(&s->temperature);
    if (key == "top_p") return f.Float(&s->top_p);
    if (key == "top_k") return f.Int(&s->top_k);
    if (key == "seed") {
      uint64_t seed = 0;
      SHOAL_RETURN_IF_ERROR(f.Bits64(&seed));
      s->seed = seed;
      return Status::Ok();
    }
    if (key == "stop") return f.Strings(&s->stop);
    if (key == "stop_token_ids") return f.Ints(&s->stop_token_ids);
    if (key == "ignore_eos") return f.Bool(&s->ignore_eos);
    if (key == "logprobs") return f.Bool(&s->logprobs);
    if (key == "presence_penalty") return f.Float(&s->presence_penalty);
    if (key == "frequency_penalty") return f.Float(&s->frequency_penalty);
    if (key == "repetition_penalty") return f.Float(&s->repetition_penalty);
    if (key == "min_tokens") return f.Int(&s->min_tokens);
    if (key == "top_logprobs") return f.Int(&s->top_logprobs);
    if (key == "unsaid") {
      uint32_t bits = 0;
      SHOAL_RETURN_IF_ERROR(f.Int(&bits));
      if (bits > kAllSamplingDefaults) return InvalidInput("sampling.unsaid: unknown fields " + std::to_string(bits));
      s->unsaid = static_cast<uint8_t>(bits);
      return Status::Ok();
    }
    if (key == "logit_bias") {
      uint32_t n = 0;
      if (!r.ReadArrayHeader(&n)) return InvalidInput("sampling.logit_bias: expected an array");
      s->logit_bias.clear();
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t two = 0;
        int64_t id = 0;
        double bias = 0;
        if (!r.ReadArrayHeader(&two) || two != 2 || !r.ReadInt(&id) || !r.ReadDouble(&bias) || id < 0 ||
            id > std::numeric_limits<int32_t>::max()) {
          return InvalidInput("sampling.logit_bias: expected [id, bias] pairs");
        }
        s->logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias));
      }
      return Status::Ok();
    }
    return f.Skip();
  });
}

Status ReadResponseFormat(MsgpackReader& r, ResponseFormat* out) {
  MsgpackFields f(r, "response_format");
  std::string type;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "type") return f.String(&type);
    if (key == "name") return f.String(&out->name);
    if (key == "schema") return f.String(&out->schema_json);
    if (key == "pattern") return f.String(&out->pattern);
    if (key == "choices") return f.Strings(&out->choices);
    return f.Skip();
  }));
  if (type == "json_object") {
    out->type = ResponseFormat::Type::kJsonObject;
  } else if (type == "json_schema") {
    out->type = ResponseFormat::Type::kJsonSchema;
  } else if (type == "regex") {
    out->type = ResponseFormat::Type::kRegex;
  } else if (type == "choice") {
    out->type = ResponseFormat::Type::kChoice;
  } else {
    return InvalidInput("response_format.type: expected json_object, json_schema, regex or choice, got '" + type + "'");
  }
  return Status::Ok();
}

void AppendToolCalls(MsgpackWriter& w, const std::vector<ToolCall>& calls) {
  w.ArrayHeader(static_cast<uint32_t>(calls.size()));
  for (const ToolCall& c : calls) {
    w.ArrayHeader(3);
    w.Str(c.id);
    w.Str(c.name);
    w.Str(c.arguments);
  }
}

Status ReadToolCalls(MsgpackReader& r, std::string_view where, std::vector<ToolCall>* out) {
  uint32_t n = 0;
  if (!r.ReadArrayHeader(&n)) return MsgpackExpected(where, "an array", r);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t three = 0;
    std::string_view id, name, arguments;
    if (!r.ReadArrayHeader(&three) || three != 3 || !r.ReadStr(&id) || !r.ReadStr(&name) || !r.ReadStr(&arguments)) {
      return InvalidInput(std::string(where) + ": expected [id, name, arguments] triples");
    }
    out->push_back({std::string(id), std::string(name), std::string(arguments)});
  }
  return Status::Ok();
}

Status ReadTopLogprobs(MsgpackReader& r, std::vector<std::vector<TopLogprob>>* out) {
  const auto bad = [] { return InvalidInput("chunk.top_logprobs: expected lists of [id, token, logprob]"); };
  uint32_t n = 0;
  if (!r.ReadArrayHeader(&n)) return bad();
  out->resize(n);
  for (auto& alternatives : *out) {
    uint32_t k = 0;
    if (!r.ReadArrayHeader(&k)) return bad();
    for (uint32_t i = 0; i < k; ++i) {
      uint32_t three = 0;
      int64_t id = 0;
      std::string_view token;
      double lp = -std::numeric_limits<double>::infinity();
      if (!r.ReadArrayHeader(&three) || three != 3 || !r.ReadInt(&id) || !r.ReadStr(&token)) return bad();
      if (!r.ReadNil() && !r.ReadDouble(&lp)) return bad();
      alternatives.push_back({static_cast<int32_t>(id), std::string(token), static_cast<float>(lp)});
    }
  }
  return Status::Ok();
}

Status ReadToolChoice(MsgpackFields& f, ToolChoice* out) {
  std::string choice;
  SHOAL_RETURN_IF_ERROR(f.String(&choice));
  if (choice == "auto") {
    out->kind = ToolChoice::Kind::kAuto;
  } else if (choice == "none") {
    out->kind = ToolChoice::Kind::kNone;
  } else if (choice == "required") {
    out->kind = ToolChoice::Kind::kRequired;
  } else if (choice.rfind("function:", 0) == 0) {
    out->kind = ToolChoice::Kind::kFunction;
    out->name = choice.substr(9);
  } else {
    return InvalidInput("tool_choice: '" + choice + "' is not a choice");
  }
  return Status::Ok();
}

// [{"text": str} | {"image": bin}, ...]
Status ReadParts(MsgpackReader& r, std::vector<ContentPart>* out) {
  uint32_t n = 0;
  if (!r.ReadArrayHeader(&n)) return MsgpackExpected("messages[].parts", "an array", r);
  for (uint32_t i = 0; i < n; ++i) {
    ContentPart p;
    MsgpackFields f(r, "messages[].parts[" + std::to_string(i) + "]");
    SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
      if (key == "text") return f.String(&p.data);
      if (key == "image") {
        p.image = true;
        std::string_view bytes;
        if (!r.ReadBin(&bytes)) return f.Error("image: expected the image's bytes (bin)");
        p.data.assign(bytes);
        return Status::Ok();
      }
      return f.Skip();
    }));
    out->push_back(std::move(p));
  }
  return Status::Ok();
}

Status ReadMessages(MsgpackReader& r, std::vector<ChatMessage>* out) {
  uint32_t n = 0;
  if (!r.ReadArrayHeader(&n)) return MsgpackExpected("messages", "an array", r);
  for (uint32_t i = 0; i < n; ++i) {
    ChatMessage m;
    MsgpackFields f(r, "messages[" + std::to_string(i) + "]");
    SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
      if (key == "role") return f.String(&m.role);
      if (key == "content") return f.String(&m.content);
      if (key == "tool_calls") return ReadToolCalls(r, "messages[].tool_calls", &m.tool_calls);
      if (key == "tool_call_id") return f.String(&m.tool_call_id);
      if (key == "parts") return ReadParts(r, &m.parts);
      return f.Skip();
    }));
    out->push_back(std::move(m));
  }
  return Status::Ok();
}

}  // namespace

void AppendGenerateWork(const GenerateRequest& r, std::string* out) {
  out->reserve(out->size() + 256 + r.prompt.size() + r.chat_template_kwargs_json.size());
  const bool chat = r.kind == GenerateRequest::Kind::kChat;
  MsgpackWriter w(out);
  const bool formatted = r.response_format.type != ResponseFormat::Type::kText;
  const bool tools = !r.tools_json.empty();
  w.MapHeader(5 + formatted + (chat ? 2 + !r.chat_template_kwargs_json.empty() : 1) + (tools ? 3 : 0));
  w.Str("kind");
  w.Str(chat ? "chat" : "completion");
  w.Str("model");
  w.Str(r.model);
  if (chat) {
    w.Str("messages");
    w.ArrayHeader(static_cast<uint32_t>(r.messages.size()));
    for (const ChatMessage& m : r.messages) {
      w.MapHeader(2 + !m.tool_calls.empty() + !m.tool_call_id.empty() + !m.parts.empty());
      w.Str("role");
      w.Str(m.role);
      w.Str("content");
      w.Str(m.content);
      if (!m.parts.empty()) {
        w.Str("parts");
        w.ArrayHeader(static_cast<uint32_t>(m.parts.size()));
        for (const ContentPart& p : m.parts) {
          w.MapHeader(1);
          w.Str(p.image ? "image" : "text");
          if (p.image) {
            w.Bin(p.data);
          } else {
            w.Str(p.data);
          }
        }
      }
      if (!m.tool_calls.empty()) {
        w.Str("tool_calls");
        AppendToolCalls(w, m.tool_calls);
      }
      if (!m.tool_call_id.empty()) {
        w.Str("tool_call_id");
        w.Str(m.tool_call_id);
      }
    }
    w.Str("add_generation_prompt");
    w.Bool(r.add_generation_prompt);
    if (!r.chat_template_kwargs_json.empty()) {
      w.Str("chat_template_kwargs");
      w.Str(r.chat_template_kwargs_json);
    }
  } else {
    w.Str("prompt");
    w.Str(r.prompt);
  }
  w.Str("sampling");
  AppendSampling(r.sampling, w);
  if (formatted) {
    const ResponseFormat& f = r.response_format;
    using Type = ResponseFormat::Type;
    w.Str("response_format");
    w.MapHeader(f.type == Type::kJsonSchema ? 3 : f.type == Type::kJsonObject ? 1 : 2);
    w.Str("type");
    switch (f.type) {
      case Type::kJsonSchema:
        w.Str("json_schema");
        w.Str("name");
        w.Str(f.name);
        w.Str("schema");
        w.Str(f.schema_json);
        break;
      case Type::kRegex:
        w.Str("regex");
        w.Str("pattern");
        w.Str(f.pattern);
        break;
      case Type::kChoice:
        w.Str("choice");
        w.Str("choices");
        Strings(w, f.choices);
        break;
      default:
        w.Str("json_object");
    }
  }
  if (tools) {
    w.Str("tools");
    w.Str(r.tools_json);
    w.Str("tool_choice");
    switch (r.tool_choice.kind) {
      case ToolChoice::Kind::kAuto: w.Str("auto"); break;
      case ToolChoice::Kind::kNone: w.Str("none"); break;
      case ToolChoice::Kind::kRequired: w.Str("required"); break;
      case ToolChoice::Kind::kFunction: w.Str("function:" + r.tool_choice.name); break;
    }
    w.Str("parallel_tool_calls");
    w.Bool(r.parallel_tool_calls);
  }
  w.Str("stream");
  w.Bool(r.stream);
  w.Str("include_usage");
  w.Bool(r.include_usage);
}

Status DecodeGenerateWork(std::string_view msgpack, GenerateRequest* r) {
  *r = GenerateRequest{};
  MsgpackReader reader(msgpack);
  MsgpackFields f(reader, "generate");
  std::string kind;
  bool has_prompt = false, has_messages = false, has_chat_fields = false;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "kind") return f.String(&kind);
    if (key == "model") return f.String(&r->model);
    if (key == "prompt") {
      has_prompt = true;
      return f.String(&r->prompt);
    }
    if (key == "messages") {
      has_messages = true;
      return ReadMessages(reader, &r->messages);
    }
    if (key == "add_generation_prompt") {
      has_chat_fields = true;
      return f.Bool(&r->add_generation_prompt);
    }
    if (key == "chat_template_kwargs") {
      has_chat_fields = true;
      return f.String(&r->chat_template_kwargs_json);
    }
    if (key == "sampling") return ReadSampling(reader, &r->sampling);
    if (key == "response_format") return ReadResponseFormat(reader, &r->response_format);
    if (key == "tools") return f.String(&r->tools_json);
    if (key == "tool_choice") return ReadToolChoice(f, &r->tool_choice);
    if (key == "parallel_tool_calls") return f.Bool(&r->parallel_tool_calls);
    if (key == "stream") return f.Bool(&r->stream);
    if (key == "include_usage") return f.Bool(&r->include_usage);
    return f.Skip();
  }));
  if (!reader.AtEnd()) return InvalidInput("generate: trailing bytes after the request");
  if (kind.empty()) return InvalidInput("kind: missing");
  if (kind == "chat") {
    r->kind = GenerateRequest::Kind::kChat;
  } else if (kind != "completion") {
    return InvalidInput("kind: expected \"chat\" or \"completion\", got \"" + kind + "\"");
  }
  // Each kind carries only its own fields (what AppendGenerateWork writes):
  // a message that mixes them is not one a gateway sent.
  const bool chat = r->kind == GenerateRequest::Kind::kChat;
  if (chat && has_prompt) return InvalidInput("prompt: not a field of a chat request");
  if (!chat && (has_messages || has_chat_fields)) {
    return InvalidInput(std::string(has_messages ? "messages" : "add_generation_prompt/chat_template_kwargs") +
                        ": not a field of a completion request");
  }
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
    case FinishReason::kToolCalls:
      return "tool_calls";
  }
  return "";
}

void AppendChunk(const GenerationChunk& c, std::string* out) {
  out->reserve(out->size() + 64 + c.text.size() + c.token_ids.size() * 5 + c.logprobs.size() * 5);
  const bool last = c.finish != FinishReason::kNone;
  MsgpackWriter w(out);
  w.MapHeader(2 + !c.logprobs.empty() + !c.top_logprobs.empty() + (last ? 7 + !c.tool_calls.empty() : 0));
  w.Str("text");
  w.Str(c.text);
  w.Str("token_ids");
  w.ArrayHeader(static_cast<uint32_t>(c.token_ids.size()));
  for (int32_t id : c.token_ids) w.Int(id);
  if (!c.logprobs.empty()) {
    w.Str("logprobs");
    w.ArrayHeader(static_cast<uint32_t>(c.logprobs.size()));
    for (float lp : c.logprobs) std::isfinite(lp) ? w.Float32(lp) : w.Nil();  // -inf: probability 0
  }
  if (!c.top_logprobs.empty()) {  // [[[id, token, logprob], ...] per token]
    w.Str("top_logprobs");
    w.ArrayHeader(static_cast<uint32_t>(c.top_logprobs.size()));
    for (const auto& alternatives : c.top_logprobs) {
      w.ArrayHeader(static_cast<uint32_t>(alternatives.size()));
      for (const TopLogprob& t : alternatives) {
        w.ArrayHeader(3);
        w.Int(t.id);
        w.Str(t.token);
        std::isfinite(t.logprob) ? w.Float32(t.logprob) : w.Nil();
      }
    }
  }
  if (!last) return;
  if (!c.tool_calls.empty()) {
    w.Str("tool_calls");
    AppendToolCalls(w, c.tool_calls);
  }
  w.Str("finish_reason");
  w.Str(FinishReasonName(c.finish));
  w.Str("prompt_tokens");
  w.Uint(c.prompt_tokens);
  w.Str("completion_tokens");
  w.Uint(c.completion_tokens);
  w.Str("cached_prompt_tokens");
  w.Uint(c.cached_prompt_tokens);
  w.Str("ttft_ms");
  w.Float64(c.ttft_ms);
  w.Str("itl_ms");
  w.Float64(c.itl_ms);
  w.Str("queue_ms");
  w.Float64(c.queue_ms);
}

Status DecodeChunk(std::string_view msgpack, GenerationChunk* c) {
  *c = GenerationChunk{};
  MsgpackReader r(msgpack);
  MsgpackFields f(r, "chunk");
  auto millis = [&](double* v) -> Status {
    SHOAL_RETURN_IF_ERROR(f.Double(v));
    return *v >= 0 ? Status::Ok() : f.Error("must be at least 0");
  };
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "text") return f.String(&c->text);
    if (key == "token_ids") return f.Ints(&c->token_ids);
    if (key == "logprobs") return f.Floats(&c->logprobs);
    if (key == "tool_calls") return ReadToolCalls(r, "chunk.tool_calls", &c->tool_calls);
    if (key == "top_logprobs") return ReadTopLogprobs(r, &c->top_logprobs);
    if (key == "finish_reason") {
      std::string_view name;
      SHOAL_RETURN_IF_ERROR(f.Str(&name));
      if (name == "stop") {
        c->finish = FinishReason::kStop;
      } else if (name == "length") {
        c->finish = FinishReason::kLength;
      } else if (name == "tool_calls") {
        c->finish = FinishReason::kToolCalls;
      } else {
        return f.Error("unknown '" + std::string(name) + "'");
      }
      return Status::Ok();
    }
    if (key == "prompt_tokens") return f.Int(&c->prompt_tokens);
    if (key == "completion_tokens") return f.Int(&c->completion_tokens);
    if (key == "cached_prompt_tokens") return f.Int(&c->cached_prompt_tokens);
    if (key == "ttft_ms") return millis(&c->ttft_ms);
    if (key == "itl_ms") return millis(&c->itl_ms);
    if (key == "queue_ms") return millis(&c->queue_ms);
    return f.Skip();
  }));
  if (!c->top_logprobs.empty() && c->top_logprobs.size() != c->token_ids.size()) {
    return InvalidInput("chunk.top_logprobs: " + std::to_string(c->top_logprobs.size()) + " lists for " +
                        std::to_string(c->token_ids.size()) + " tokens");
  }
  if (!c->logprobs.empty() && c->logprobs.size() != c->token_ids.size()) {
    return InvalidInput("chunk.logprobs: " + std::to_string(c->logprobs.size()) + " values for " +
                        std::to_string(c->token_ids.size()) + " tokens");
  }
  if (!r.AtEnd()) return InvalidInput("chunk: trailing bytes after the chunk");
  return Status::Ok();
}

}  // namespace shoal::wire
