#include "wire/generate_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "wire/generate_json.h"

namespace shoal::wire {
namespace {

using gen::Json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

// A parse step: Ok and `handled` false means "not my field".
struct FieldResult {
  Status status;
  bool handled = true;
};
FieldResult NotMine() { return {Status::Ok(), false}; }

Status ReadFloat(const Json& v, const char* field, float* out) {
  double d = 0;
  SHOAL_RETURN_IF_ERROR(gen::ReadNumber(v, field, &d));
  // Out-of-range values stay out of range (and fail validation) without an
  // undefined double → float conversion.
  constexpr double kMax = std::numeric_limits<float>::max();
  *out = static_cast<float>(std::clamp(d, -kMax, kMax));
  return Status::Ok();
}

Status ReadMaxTokens(const Json& v, const char* field, uint32_t* out) {
  int64_t n = 0;
  SHOAL_RETURN_IF_ERROR(gen::ReadInt(v, field, 1, kMaxInt32, &n));
  *out = static_cast<uint32_t>(n);
  return Status::Ok();
}

Status ReadN(const Json& v, uint32_t* out) {
  int64_t n = 0;
  SHOAL_RETURN_IF_ERROR(gen::ReadInt(v, "n", 1, kMaxChoices, &n));
  *out = static_cast<uint32_t>(n);
  return Status::Ok();
}

Status ReadTopLogprobs(const Json& v, const char* field, uint32_t* out, int64_t max = kMaxTopLogprobs) {
  int64_t n = 0;
  SHOAL_RETURN_IF_ERROR(gen::ReadInt(v, field, 0, max, &n));
  *out = static_cast<uint32_t>(n);
  return Status::Ok();
}

Status ReadStreamOptions(const Json& v, GenerateRequest* r) {
  if (!v.is_object()) return gen::Expected("stream_options", "an object", v);
  auto it = v.find("include_usage");
  if (it != v.end() && !it->is_null()) {
    SHOAL_RETURN_IF_ERROR(gen::ReadBool(*it, "stream_options.include_usage", &r->include_usage));
  }
  return Status::Ok();
}

// OpenAI's logit_bias: {"token id": bias}, the ids as strings (JSON keys).
Status ReadLogitBias(const Json& v, std::vector<std::pair<int32_t, float>>* out) {
  if (!v.is_object()) return gen::Expected("logit_bias", "an object of token ids to biases", v);
  out->clear();
  for (const auto& [key, value] : v.items()) {
    const std::string field = "logit_bias." + key;
    int64_t id = -1;
    if (!key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos) {
      id = std::stoll(key);
    }
    if (id < 0 || id > kMaxInt32) return InvalidInput(field + ": the key must be a token id (a non-negative integer)");
    float bias = 0;
    SHOAL_RETURN_IF_ERROR(ReadFloat(value, field.c_str(), &bias));
    out->emplace_back(static_cast<int32_t>(id), bias);
  }
  return Status::Ok();
}

// OpenAI tools: [{"type": "function", "function": {"name", "description",
// "parameters", "strict"}}], kept as the JSON text the chat template reads.
constexpr size_t kMaxTools = 128;
// `strict` gets the first tools[i].function.strict that is true.
Status ReadTools(const Json& v, std::string* out, std::vector<std::string>* names, std::string* strict) {
  if (!v.is_array()) return gen::Expected("tools", "an array of tools", v);
  if (v.size() > kMaxTools) return InvalidInput("tools: at most " + std::to_string(kMaxTools));
  names->clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = "tools[" + std::to_string(i) + "]";
    const Json& t = v[i];
    if (!t.is_object()) return gen::Expected(f, "an object", t);
    for (const auto& [key, value] : t.items()) {
      if (key != "type" && key != "function") return InvalidInput(f + "." + key + ": not a field of a tool");
    }
    if (t.value("type", "") != "function") return InvalidInput(f + ".type: only \"function\"");
    auto fn = t.find("function");
    if (fn == t.end() || !fn->is_object()) return InvalidInput(f + ".function: missing (an object)");
    for (const auto& [key, value] : fn->items()) {
      if (key != "name" && key != "description" && key != "parameters" && key != "strict") {
        return InvalidInput(f + ".function." + key + ": not a field of a function");
      }
    }
    std::string name;
    auto n = fn->find("name");
    if (n == fn->end()) return InvalidInput(f + ".function.name: missing");
    SHOAL_RETURN_IF_ERROR(gen::ReadString(*n, f + ".function.name", &name));
    if (name.empty() || name.size() > 64 ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos) {
      return InvalidInput(f + ".function.name: 1 to 64 letters, digits, _ and -");
    }
    if (std::find(names->begin(), names->end(), name) != names->end()) {
      return InvalidInput(f + ".function.name: '" + name + "' is named twice");
    }
    names->push_back(name);
    if (auto d = fn->find("description"); d != fn->end() && !d->is_string()) {
      return gen::Expected(f + ".function.description", "a string", *d);
    }
    if (auto p = fn->find("parameters"); p != fn->end() && !p->is_object()) {
      return gen::Expected(f + ".function.parameters", "a JSON Schema object", *p);
    }
    if (auto s = fn->find("strict"); s != fn->end()) {
      if (!s->is_boolean()) return gen::Expected(f + ".function.strict", "a boolean", *s);
      if (s->get<bool>() && strict->empty()) *strict = f + ".function.strict";
    }
  }
  std::string bounded;  // ReadObjectText bounds the nesting
  SHOAL_RETURN_IF_ERROR(gen::ReadObjectText(Json{{"tools", v}}, "tools", &bounded));
  *out = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  return Status::Ok();
}

// OpenAI tool_choice: "auto" | "none" | "required" | {"type": "function", "function": {"name"}}.
Status ReadToolChoice(const Json& v, ToolChoice* out) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "auto") out->kind = ToolChoice::Kind::kAuto;
    else if (s == "none") out->kind = ToolChoice::Kind::kNone;
    else if (s == "required") out->kind = ToolChoice::Kind::kRequired;
    else return InvalidInput("tool_choice: '" + s + "' is not one of auto, none, required (or a function)");
    return Status::Ok();
  }
  if (!v.is_object() || v.value("type", "") != "function" || !v.contains("function") || !v["function"].is_object() ||
      !v["function"].contains("name") || !v["function"]["name"].is_string()) {
    return InvalidInput("tool_choice: expected \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  }
  out->kind = ToolChoice::Kind::kFunction;
  out->name = v["function"]["name"].get<std::string>();
  return Status::Ok();
}

// The fields all three routes read alike.
FieldResult ReadSamplingField(const std::string& key, const Json& v, GenerateRequest* r) {
  SamplingParams& s = r->sampling;
  if (key == "max_tokens") return {ReadMaxTokens(v, "max_tokens", &s.max_tokens)};
  // A field the client sends is its own; one it leaves out may take the
  // model's default (SamplingParams::unsaid).
  if (key == "temperature") s.unsaid &= ~kDefaultTemperature;
  if (key == "top_p") s.unsaid &= ~kDefaultTopP;
  if (key == "top_k") s.unsaid &= ~kDefaultTopK;
  if (key == "repetition_penalty") s.unsaid &= ~kDefaultRepetitionPenalty;
  if (key == "temperature") return {ReadFloat(v, "temperature", &s.temperature)};
  if (key == "top_p") return {ReadFloat(v, "top_p", &s.top_p)};
  if (key == "top_k") {
    // vLLM's "off" is -1; ours is 0.
    int64_t k = 0;
    Status st = gen::ReadInt(v, "top_k", -1, kMaxInt32, &k);
    s.top_k = static_cast<int32_t>(std::max<int64_t>(k, 0));
    return {st};
  }
  if (key == "seed") {
    uint64_t seed = 0;
    Status st = gen::ReadSeed(v, "seed", &seed);
    if (st.ok()) s.seed = seed;
    return {st};
  }
  if (key == "stop") return {gen::ReadStop(v, "stop", &s.stop)};
  if (key == "stop_token_ids") return {gen::ReadTokenIds(v, "stop_token_ids", &s.stop_token_ids)};
  if (key == "ignore_eos") return {gen::ReadBool(v, "ignore_eos", &s.ignore_eos)};
  if (key == "stream") return {gen::ReadBool(v, "stream", &r->stream)};
  if (key == "presence_penalty") return {ReadFloat(v, "presence_penalty", &s.presence_penalty)};
  if (key == "frequency_penalty") return {ReadFloat(v, "frequency_penalty", &s.frequency_penalty)};
  if (key == "repetition_penalty") return {ReadFloat(v, "repetition_penalty", &s.repetition_penalty)};
  if (key == "logit_bias") return {ReadLogitBias(v, &s.logit_bias)};
  if (key == "min_tokens") {
    int64_t n = 0;
    Status st = gen::ReadInt(v, "min_tokens", 0, kMaxInt32, &n);
    s.min_tokens = static_cast<uint32_t>(n);
    return {st};
  }
  return NotMine();
}

// Chat template inputs (chat and native routes).
FieldResult ReadChatField(const std::string& key, const Json& v, GenerateRequest* r) {
  if (key == "messages") return {gen::ReadMessages(v, "messages", &r->messages)};
  if (key == "add_generation_prompt") {
    return {gen::ReadBool(v, "add_generation_prompt", &r->add_generation_prompt)};
  }
  if (key == "chat_template_kwargs") {
    return {gen::ReadObjectText(v, "chat_template_kwargs", &r->chat_template_kwargs_json)};
  }
  return NotMine();
}

// OpenAI (and vLLM) fields Shoal does not implement: a value that asks for
// nothing (a penalty of 0, no tools) passes, anything else is refused —
// never accepted and dropped. A field no API defines is unknown.
Status ReadUnimplementedField(const std::string& key, const Json& v) {
  struct Field {
    std::string_view name;
    bool (*neutral)(const Json&);
    std::string_view allowed;  // what passes, for the message
  };
  static const Field kFields[] = {
      {"functions", [](const Json& x) { return x.is_array() && x.empty(); }, "[]"},
      {"function_call", [](const Json& x) { return x == "none"; }, "\"none\""},
      {"store", [](const Json& x) { return x == false; }, "false"},
      {"metadata", [](const Json& x) { return x.is_object() && x.empty(); }, "{}"},
      {"modalities", [](const Json& x) { return x == Json::array({"text"}); }, "[\"text\"]"},
      {"service_tier", [](const Json& x) { return x == "auto" || x == "default"; }, "\"auto\" or \"default\""},
      // Shoal names the caller by its API key, and has no other use for these.
      {"user", [](const Json&) { return false; }, "nothing: Shoal names the caller by its API key"},
      {"safety_identifier", [](const Json&) { return false; }, "nothing: Shoal names the caller by its API key"},
      {"prompt_cache_key", [](const Json&) { return false; }, "nothing: Shoal's prefix cache needs no key"},
      {"reasoning_effort", [](const Json&) { return false; }, "nothing: use chat_template_kwargs"},
      {"verbosity", [](const Json&) { return false; }, "nothing"},
      {"audio", [](const Json&) { return false; }, "nothing"},
      {"prediction", [](const Json&) { return false; }, "nothing"},
      {"web_search_options", [](const Json&) { return false; }, "nothing"},
  };
  for (const Field& f : kFields) {
    if (key != f.name) continue;
    if (f.neutral(v)) return Status::Ok();
    return InvalidInput(key + ": not supported (accepted: " + std::string(f.allowed) + ")");
  }
  return InvalidInput("body: unknown field '" + key + "'");
}

// Calls `each(key, value)` per field of the body that is not null.
template <class Each>
Status ForEachField(std::string_view body, Each&& each) {
  Json j;
  SHOAL_RETURN_IF_ERROR(gen::ParseObject(body, "body", &j));
  for (const auto& item : j.items()) {
    if (item.value().is_null()) continue;
    SHOAL_RETURN_IF_ERROR(each(item.key(), item.value()));
  }
  return Status::Ok();
}

Status ReadModel(const Json& v, GenerateRequest* r) {
  SHOAL_RETURN_IF_ERROR(gen::ReadString(v, "model", &r->model));
  if (r->model.empty()) return InvalidInput("model: must not be empty");
  return Status::Ok();
}

// The prompt's text must fit one work message.
Status CheckSize(const GenerateRequest& r, const ParseLimits& limits) {
  size_t bytes = r.prompt.size() + r.chat_template_kwargs_json.size() + r.response_format.bytes() + r.tools_json.size();
  for (const auto& m : r.messages) {
    bytes += m.role.size() + m.content.size() + m.tool_call_id.size();
    for (const ToolCall& c : m.tool_calls) bytes += c.id.size() + c.name.size() + c.arguments.size();
    for (const ContentPart& p : m.parts) bytes += p.image ? p.data.size() : 0;  // its text is in content
  }
  if (bytes <= limits.max_item_bytes) return Status::Ok();
  const char* field = r.kind == GenerateRequest::Kind::kChat ? "messages" : "prompt";
  return Status(Code::kPayloadTooLarge, std::string(field) + ": " + std::to_string(bytes) +
                                            " bytes, over the limit of " +
                                            std::to_string(limits.max_item_bytes));
}

Status Finish(const GenerateRequest& r, const ParseLimits& limits) {
  SHOAL_RETURN_IF_ERROR(CheckSize(r, limits));
  return gen::Validate(r);
}

// OpenAI completions' prompt: a string, or an array holding one string.
Status ReadPrompt(const Json& v, std::string* out) {
  if (v.is_string()) return gen::ReadString(v, "prompt", out);
  if (!v.is_array()) return gen::Expected("prompt", "a string or an array of one string", v);
  if (!v.empty() && (v[0].is_number() || v[0].is_array())) {
    return InvalidInput("prompt: token-id prompts are not supported; send text");
  }
  if (v.size() != 1) {
    return InvalidInput("prompt: exactly one prompt per request is supported, got " +
                        std::to_string(v.size()));
  }
  return gen::ReadString(v[0], "prompt[0]", out);
}

}  // namespace

Status ParseChatCompletions(std::string_view body, const ParseLimits& limits,
                            GenerateRequest* out) {
  *out = GenerateRequest{};
  out->kind = GenerateRequest::Kind::kChat;
  out->sampling.unsaid = kAllSamplingDefaults;
  bool has_messages = false, has_stream_options = false, has_tool_choice = false, has_parallel = false;
  uint32_t max_completion_tokens = 0;
  std::vector<std::string> tool_names;
  std::string strict_tool;
  SHOAL_RETURN_IF_ERROR(ForEachField(body, [&](const std::string& key, const Json& v) -> Status {
    if (FieldResult f = ReadSamplingField(key, v, out); f.handled) return f.status;
    if (FieldResult f = ReadChatField(key, v, out); f.handled) {
      has_messages = has_messages || key == "messages";
      return f.status;
    }
    if (key == "model") return ReadModel(v, out);
    if (key == "max_completion_tokens") {
      return ReadMaxTokens(v, "max_completion_tokens", &max_completion_tokens);
    }
    if (key == "logprobs") return gen::ReadBool(v, "logprobs", &out->sampling.logprobs);
    if (key == "top_logprobs") return ReadTopLogprobs(v, "top_logprobs", &out->sampling.top_logprobs);
    if (key == "n") return ReadN(v, &out->n);
    if (key == "stream_options") {
      has_stream_options = true;
      return ReadStreamOptions(v, out);
    }
    if (key == "response_format") return gen::ReadResponseFormat(v, /*native=*/false, &out->response_format);
    if (key == "tools") return ReadTools(v, &out->tools_json, &tool_names, &strict_tool);
    if (key == "tool_choice") {
      has_tool_choice = true;
      return ReadToolChoice(v, &out->tool_choice);
    }
    if (key == "parallel_tool_calls") {
      has_parallel = true;
      return gen::ReadBool(v, "parallel_tool_calls", &out->parallel_tool_calls);
    }
    return ReadUnimplementedField(key, v);
  }));
  if (out->model.empty()) return InvalidInput("model: missing");
  if (!has_messages) return InvalidInput("messages: missing");
  if (tool_names.empty()) {
    // No tools (or "tools": []): a choice other than none has nothing to choose.
    out->tools_json.clear();
    if (has_tool_choice && out->tool_choice.kind != ToolChoice::Kind::kNone) {
      return InvalidInput("tool_choice: there are no tools to call");
    }
    if (has_parallel && !out->parallel_tool_calls) {
      return InvalidInput("parallel_tool_calls: there are no tools to call");
    }
    out->tool_choice = ToolChoice{};
  } else if (out->tool_choice.kind == ToolChoice::Kind::kFunction &&
             std::find(tool_names.begin(), tool_names.end(), out->tool_choice.name) == tool_names.end()) {
    return InvalidInput("tool_choice.function.name: '" + out->tool_choice.name + "' is not one of the tools");
  } else if (!strict_tool.empty() && out->tool_choice.kind == ToolChoice::Kind::kAuto) {
    // Arguments are held to their schema only where the output is a call.
    return InvalidInput(strict_tool + ": true is held only when a call is required (tool_choice \"required\" or "
                        "a function); with \"auto\" the model's arguments come back as it writes them");
  }
  // The newer name wins when a client sends both.
  if (max_completion_tokens) out->sampling.max_tokens = max_completion_tokens;
  if (has_stream_options && !out->stream) {
    return InvalidInput("stream_options: only allowed when stream is true");
  }
  return Finish(*out, limits);
}

Status ParseCompletions(std::string_view body, const ParseLimits& limits, GenerateRequest* out) {
  *out = GenerateRequest{};
  out->kind = GenerateRequest::Kind::kCompletion;
  out->sampling.max_tokens = kCompletionsDefaultMaxTokens;
  out->sampling.unsaid = kAllSamplingDefaults;
  bool has_prompt = false, has_stream_options = false;
  SHOAL_RETURN_IF_ERROR(ForEachField(body, [&](const std::string& key, const Json& v) -> Status {
    if (FieldResult f = ReadSamplingField(key, v, out); f.handled) return f.status;
    if (key == "model") return ReadModel(v, out);
    if (key == "prompt") {
      has_prompt = true;
      return ReadPrompt(v, &out->prompt);
    }
    if (key == "logprobs") {
      // An integer in OpenAI completions: the chosen tokens' logprobs, and
      // this many alternatives per token.
      out->sampling.logprobs = true;
      return ReadTopLogprobs(v, "logprobs", &out->sampling.top_logprobs, 5);
    }
    if (key == "echo") {
      bool echo = false;
      SHOAL_RETURN_IF_ERROR(gen::ReadBool(v, "echo", &echo));
      if (echo) return InvalidInput("echo: not supported");
      return Status::Ok();
    }
    if (key == "best_of") {
      int64_t n = 0;
      SHOAL_RETURN_IF_ERROR(gen::ReadInt(v, "best_of", 1, kMaxInt32, &n));
      if (n > 1) return InvalidInput("best_of: not supported (only 1), got " + std::to_string(n));
      return Status::Ok();
    }
    if (key == "suffix") {
      std::string suffix;
      SHOAL_RETURN_IF_ERROR(gen::ReadString(v, "suffix", &suffix));
      if (!suffix.empty()) return InvalidInput("suffix: not supported");
      return Status::Ok();
    }
    if (key == "n") return ReadN(v, &out->n);
    if (key == "stream_options") {
      has_stream_options = true;
      return ReadStreamOptions(v, out);
    }
    return ReadUnimplementedField(key, v);
  }));
  if (out->model.empty()) return InvalidInput("model: missing");
  if (!has_prompt) return InvalidInput("prompt: missing");
  if (has_stream_options && !out->stream) {
    return InvalidInput("stream_options: only allowed when stream is true");
  }
  return Finish(*out, limits);
}

Status ParseGenerate(std::string_view body, std::string_view model, const ParseLimits& limits,
                     GenerateRequest* out) {
  *out = GenerateRequest{};
  out->model = std::string(model);
  out->sampling.unsaid = kAllSamplingDefaults;
  bool has_prompt = false, has_messages = false, has_template_fields = false;
  SHOAL_RETURN_IF_ERROR(ForEachField(body, [&](const std::string& key, const Json& v) -> Status {
    if (FieldResult f = ReadSamplingField(key, v, out); f.handled) return f.status;
    if (FieldResult f = ReadChatField(key, v, out); f.handled) {
      (key == "messages" ? has_messages : has_template_fields) = true;
      return f.status;
    }
    if (key == "prompt") {
      has_prompt = true;
      return gen::ReadString(v, "prompt", &out->prompt);
    }
    if (key == "logprobs") return gen::ReadBool(v, "logprobs", &out->sampling.logprobs);
    if (key == "top_logprobs") return ReadTopLogprobs(v, "top_logprobs", &out->sampling.top_logprobs);
    if (key == "lora") return gen::ReadString(v, "lora", &out->lora);
    if (key == "response_format") return gen::ReadResponseFormat(v, /*native=*/true, &out->response_format);
    return InvalidInput("body: unknown field '" + key + "'");
  }));
  if (has_prompt == has_messages) {
    return InvalidInput(has_prompt ? "body: give either prompt or messages, not both"
                                   : "prompt: missing (or give messages)");
  }
  if (has_messages) {
    out->kind = GenerateRequest::Kind::kChat;
  } else if (has_template_fields) {
    return InvalidInput(
        "body: add_generation_prompt and chat_template_kwargs go with messages, not prompt");
  }
  // A stream always ends with its usage; the OpenAI opt-in does not apply.
  out->include_usage = out->stream;
  return Finish(*out, limits);
}

}  // namespace shoal::wire
