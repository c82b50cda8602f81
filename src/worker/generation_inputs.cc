#include "worker/generation_inputs.h"

#include <nlohmann/json.hpp>

#include "runtime/structured/json_schema_grammar.h"
#include "runtime/structured/regex_grammar.h"

namespace shoal::worker {

std::vector<ChatTurn> Turns(const std::vector<wire::ChatMessage>& messages) {
  std::vector<ChatTurn> turns;
  turns.reserve(messages.size());
  for (const wire::ChatMessage& m : messages) {
    ChatTurn t{m.role, m.content, {}, m.tool_call_id, {}};
    if (!m.tool_calls.empty()) {
      // As templates read them: the arguments an object, not its text.
      nlohmann::json calls = nlohmann::json::array();
      for (const wire::ToolCall& c : m.tool_calls) {
        calls.push_back({{"id", c.id},
                         {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", nlohmann::json::parse(c.arguments, nullptr, false)}}}});
      }
      t.tool_calls_json = calls.dump();
    }
    for (const wire::ContentPart& p : m.parts) t.parts.push_back({p.image, p.image ? std::string() : p.data});
    turns.push_back(std::move(t));
  }
  return turns;
}

std::vector<RequestImage> Images(const std::vector<wire::ChatMessage>& messages) {
  std::vector<RequestImage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    for (size_t j = 0; j < messages[i].parts.size(); ++j) {
      const wire::ContentPart& p = messages[i].parts[j];
      if (p.image) out.push_back({p.data, "messages[" + std::to_string(i) + "].content[" + std::to_string(j) + "]"});
    }
  }
  return out;
}

std::string TemplateKwargs(const std::string& kwargs_json, const std::string& tools_json) {
  if (tools_json.empty()) return kwargs_json;
  nlohmann::json vars = kwargs_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(kwargs_json, nullptr, false);
  if (!vars.is_object()) return kwargs_json;  // RenderChat refuses it
  vars["tools"] = nlohmann::json::parse(tools_json, nullptr, false);
  return vars.dump();
}

Result<std::string> FormatGrammar(const wire::ResponseFormat& f, std::string* field) {
  using Type = wire::ResponseFormat::Type;
  switch (f.type) {
    case Type::kJsonSchema:
      *field = "response_format.json_schema.schema";
      return structured::JsonSchemaGrammar(f.schema_json);
    case Type::kRegex:
      *field = "response_format.pattern";
      return structured::RegexGrammar(f.pattern, *field);
    case Type::kChoice:
      *field = "response_format.choices";
      return structured::ChoiceGrammar(f.choices, *field);
    default:
      *field = "response_format";
      return structured::JsonObjectGrammar();
  }
}

void ApplySamplingDefaults(const SamplingDefaults& d, wire::SamplingParams* p) {
  if (d.temperature && (p->unsaid & wire::kDefaultTemperature)) p->temperature = *d.temperature;
  if (d.top_p && (p->unsaid & wire::kDefaultTopP)) p->top_p = *d.top_p;
  if (d.top_k && (p->unsaid & wire::kDefaultTopK)) p->top_k = *d.top_k;
  if (d.repetition_penalty && (p->unsaid & wire::kDefaultRepetitionPenalty)) {
    p->repetition_penalty = *d.repetition_penalty;
  }
}

}  // namespace shoal::worker
