#include "runtime/upstream/openai_wire.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace shoal::upstream {
namespace {

using nlohmann::json;

Status Garbage(std::string_view what, std::string_view data) {
  std::string quoted(data.substr(0, 200));
  if (data.size() > 200) quoted += "...";
  return Status(Code::kInferenceError, "upstream sent garbage (" + std::string(what) + "): " + quoted);
}

// The upstream's message in an OpenAI error object, or the whole of it.
std::string ErrorMessage(const json& error) {
  if (error.is_object()) {
    if (auto m = error.find("message"); m != error.end() && m->is_string()) return m->get<std::string>();
  }
  return error.dump();
}

}  // namespace

std::string EmbeddingsBody(std::string_view model, std::span<const EncodeInput* const> in) {
  json input = json::array();
  for (const EncodeInput* e : in) input.push_back(std::string(e->text));
  return json{{"model", model}, {"input", std::move(input)}, {"encoding_format", "float"}}.dump();
}

Status ReadEmbeddings(std::string_view body, std::span<const EncodeInput* const> in,
                      std::span<EncodeOutput* const> out) {
  const json reply = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object()) return Garbage("an /embeddings reply that is not a JSON object", body);
  const auto data = reply.find("data");
  if (data == reply.end() || !data->is_array() || data->size() != in.size()) {
    return Garbage("an /embeddings reply without one vector per input", body);
  }
  std::vector<bool> seen(in.size(), false);
  for (size_t k = 0; k < data->size(); ++k) {
    const json& d = (*data)[k];
    const auto index = d.is_object() ? d.find("index") : d.end();
    const size_t i = index != d.end() && index->is_number_unsigned() ? index->get<size_t>() : k;
    const auto vec = d.is_object() ? d.find("embedding") : d.end();
    if (i >= in.size() || seen[i] || vec == d.end() || !vec->is_array() || vec->empty()) {
      return Garbage("an /embeddings item without a vector or with a bad index", d.dump());
    }
    seen[i] = true;
    std::vector<float>& v = out[i]->dense;
    v.clear();
    v.reserve(vec->size());
    double norm = 0;
    for (const json& x : *vec) {
      if (!x.is_number()) return Garbage("an embedding with a value that is not a number", x.dump());
      v.push_back(x.get<float>());
      norm += double(v.back()) * v.back();
    }
    if (!std::isfinite(norm)) return Garbage("an embedding that is not finite", "");
    if (in[i]->normalize && norm > 0) {
      const float scale = static_cast<float>(1.0 / std::sqrt(norm));
      for (float& x : v) x *= scale;
    }
  }
  // The call's token count, shared out by bytes (the last input takes the rest).
  uint64_t tokens = 0;
  if (auto usage = reply.find("usage"); usage != reply.end() && usage->is_object()) {
    if (auto p = usage->find("prompt_tokens"); p != usage->end() && p->is_number_unsigned()) tokens = p->get<uint64_t>();
  }
  uint64_t bytes = 0;
  for (const EncodeInput* e : in) bytes += e->text.size();
  uint64_t given = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint64_t share = i + 1 == in.size() ? tokens - given : bytes ? tokens * in[i]->text.size() / bytes : 0;
    out[i]->tokens = static_cast<uint32_t>(share);
    given += share;
  }
  return Status::Ok();
}

std::vector<std::string> UpstreamAdjustments() { return {"presence_penalty", "frequency_penalty", "logit_bias"}; }

Result<GenerationCall> GenerationRequest(std::string_view model, const GenerationJob& job) {
  if (const std::string missing = FirstUnapplied(job.adjustments, UpstreamAdjustments()); !missing.empty()) {
    return InvalidInput(missing + ": not an OpenAI field, so not passed to an upstream server that may ignore it");
  }
  if (job.logprobs) {
    return InvalidInput("logprobs: an upstream model does not stream per-token log-probabilities to Shoal");
  }
  if (!job.lora.empty()) {
    return Status(Code::kModelNotFound, "lora '" + job.lora + "': an upstream model has no adapters in Shoal");
  }
  json b = {{"model", model}, {"stream", true}, {"stream_options", {{"include_usage", true}}},
            {"temperature", job.sampling.temperature}, {"top_p", job.sampling.top_p},
            {"seed", job.seed}};
  if (job.max_tokens) b["max_tokens"] = job.max_tokens;
  if (job.sampling.top_k > 0) b["top_k"] = job.sampling.top_k;
  if (!job.stop.empty()) b["stop"] = job.stop;
  if (!job.stop_token_ids.empty()) b["stop_token_ids"] = job.stop_token_ids;
  if (job.ignore_eos) b["ignore_eos"] = true;
  const LogitAdjustments& a = job.adjustments;
  if (a.presence_penalty != 0) b["presence_penalty"] = a.presence_penalty;
  if (a.frequency_penalty != 0) b["frequency_penalty"] = a.frequency_penalty;
  if (!a.logit_bias.empty()) {
    json bias = json::object();  // OpenAI's: token ids as the keys
    for (auto [id, value] : a.logit_bias) bias[std::to_string(id)] = value;
    b["logit_bias"] = std::move(bias);
  }
  GenerationCall call;
  if (job.chat) {
    json messages = json::array();
    for (const ChatTurn& t : job.messages) messages.push_back({{"role", t.role}, {"content", t.content}});
    b["messages"] = std::move(messages);
    if (!job.add_generation_prompt) b["add_generation_prompt"] = false;
    if (!job.chat_template_kwargs_json.empty()) {
      json kwargs = json::parse(job.chat_template_kwargs_json, nullptr, false);
      if (!kwargs.is_object()) return InvalidInput("chat_template_kwargs: expected a JSON object");
      b["chat_template_kwargs"] = std::move(kwargs);
    }
    if (job.format.kind == OutputFormat::Kind::kJsonObject) b["response_format"] = {{"type", "json_object"}};
    if (job.format.kind == OutputFormat::Kind::kJsonSchema) {
      json schema = json::parse(job.format.schema_json, nullptr, false);
      if (!schema.is_object()) return InvalidInput("response_format.json_schema.schema: expected a JSON object");
      b["response_format"] = {{"type", "json_schema"},
                              {"json_schema", {{"name", job.format.schema_name}, {"schema", std::move(schema)},
                                               {"strict", true}}}};
    }
    call.path = "/chat/completions";
  } else {
    // OpenAI's completions define no response_format, and a server that
    // does not know it would write text: refused rather than sent.
    if (job.format.kind != OutputFormat::Kind::kText) {
      return InvalidInput("response_format: an upstream model takes it with messages, not a prompt");
    }
    b["prompt"] = job.prompt;
    if (!job.add_special_tokens) b["add_special_tokens"] = false;
    call.path = "/completions";
  }
  call.body = b.dump();
  return call;
}

Status ReadStreamEvent(std::string_view data, bool chat, StreamEvent* event) {
  *event = StreamEvent();
  if (data == "[DONE]") {
    event->done = true;
    return Status::Ok();
  }
  const json e = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!e.is_object()) return Garbage("a stream event that is not a JSON object", data);
  if (auto error = e.find("error"); error != e.end()) {
    return Status(Code::kInferenceError, "upstream failed mid-stream: " + ErrorMessage(*error));
  }
  if (auto usage = e.find("usage"); usage != e.end() && usage->is_object()) {
    event->has_usage = true;
    auto count = [&](const char* key) -> uint32_t {
      auto v = usage->find(key);
      return v != usage->end() && v->is_number_unsigned() ? v->get<uint32_t>() : 0;
    };
    event->prompt_tokens = count("prompt_tokens");
    event->completion_tokens = count("completion_tokens");
  }
  const auto choices = e.find("choices");
  if (choices == e.end() || !choices->is_array()) {
    if (event->has_usage) return Status::Ok();
    return Garbage("a stream event without choices", data);
  }
  if (choices->empty()) return Status::Ok();  // the usage event
  const json& c = choices->front();
  if (!c.is_object()) return Garbage("a choice that is not an object", data);
  const json* text = nullptr;
  if (chat) {
    if (auto delta = c.find("delta"); delta != c.end() && delta->is_object()) {
      if (auto content = delta->find("content"); content != delta->end()) text = &*content;
    }
  } else if (auto t = c.find("text"); t != c.end()) {
    text = &*t;
  }
  if (text && text->is_string()) {
    event->text = text->get<std::string>();
  } else if (text && !text->is_null()) {
    return Garbage("a choice whose text is not a string", data);
  }
  if (auto f = c.find("finish_reason"); f != c.end() && f->is_string()) event->finish_reason = f->get<std::string>();
  return Status::Ok();
}

}  // namespace shoal::upstream
