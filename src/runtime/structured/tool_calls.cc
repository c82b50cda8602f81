#include "runtime/structured/tool_calls.h"

#include <nlohmann/json.hpp>

#include "runtime/structured/gbnf.h"
#include "runtime/structured/json_schema_grammar.h"

namespace shoal::structured {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  return s;
}

std::string_view Trim(std::string_view s) {
  s = TrimLeft(s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// {"name": str, <args_key>: object (or a string holding one)} as a call.
std::optional<ParsedCall> CallOf(const Json& j, std::string_view args_key) {
  if (!j.is_object()) return std::nullopt;
  auto name = j.find("name");
  auto args = j.find(std::string(args_key));
  if (args == j.end() && args_key == "parameters") args = j.find("arguments");  // Llama writes either
  if (name == j.end() || !name->is_string() || args == j.end()) return std::nullopt;
  Json object = *args;
  if (object.is_string()) object = Json::parse(object.get<std::string>(), nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) return std::nullopt;
  return ParsedCall{name->get<std::string>(), object.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

// Where the JSON value that starts at text[0] ends (one past its last
// byte), or npos when it does not end: brackets counted outside strings.
size_t JsonEnd(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

std::optional<ParsedOutput> ParseHermes(std::string_view text) {
  ParsedOutput out;
  size_t at = 0;
  for (;;) {
    const size_t open = text.find(kHermesOpen, at);
    if (open == std::string_view::npos) {
      out.content += text.substr(at);
      break;
    }
    out.content += text.substr(at, open - at);
    const size_t body = open + kHermesOpen.size();
    size_t close = text.find(kHermesClose, body);
    const std::string_view json = Trim(text.substr(body, close == std::string_view::npos ? text.npos : close - body));
    auto call = CallOf(Json::parse(json, nullptr, /*allow_exceptions=*/false), "arguments");
    if (!call) return std::nullopt;
    out.calls.push_back(std::move(*call));
    if (close == std::string_view::npos) break;  // the output ended inside the block, after a whole call
    at = close + kHermesClose.size();
  }
  out.content = std::string(Trim(out.content));
  return out;
}

std::optional<ParsedOutput> ParseLlama3(std::string_view text) {
  std::string_view rest = TrimLeft(text);
  if (rest.substr(0, kPythonTag.size()) == kPythonTag) rest = TrimLeft(rest.substr(kPythonTag.size()));
  if (rest.empty() || rest.front() != '{') return ParsedOutput{std::string(text), {}};
  ParsedOutput out;
  while (!rest.empty()) {
    const size_t end = JsonEnd(rest);
    if (end == std::string_view::npos) return std::nullopt;
    auto call = CallOf(Json::parse(rest.substr(0, end), nullptr, /*allow_exceptions=*/false), "parameters");
    if (!call) return std::nullopt;
    out.calls.push_back(std::move(*call));
    rest = TrimLeft(rest.substr(end));
    if (!rest.empty() && rest.front() == ';') rest = TrimLeft(rest.substr(1));
    else if (!rest.empty()) return std::nullopt;
  }
  return out;
}

std::optional<ParsedOutput> ParseMistral(std::string_view text) {
  const size_t marker = text.find(kMistralMarker);
  if (marker == std::string_view::npos) return ParsedOutput{std::string(text), {}};
  const Json calls = Json::parse(Trim(text.substr(marker + kMistralMarker.size())), nullptr, false);
  if (!calls.is_array() || calls.empty()) return std::nullopt;
  ParsedOutput out{std::string(Trim(text.substr(0, marker))), {}};
  for (const Json& c : calls) {
    auto call = CallOf(c, "arguments");
    if (!call) return std::nullopt;
    out.calls.push_back(std::move(*call));
  }
  return out;
}

// The length of the longest suffix of `text` that begins `marker`.
size_t PartialMarker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

std::string ProbeMessagesJson() {
  Json call = {{"id", "call_0"}, {"type", "function"},
               {"function", {{"name", kProbeName}, {"arguments", {{"x", 1}}}}}};
  return Json::array({{{"role", "user"}, {"content", "hi"}},
                      {{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}}})
      .dump();
}

std::string ProbeToolsJson() {
  return Json::array({{{"type", "function"},
                       {"function", {{"name", kProbeName}, {"description", "probe"},
                                     {"parameters", {{"type", "object"}, {"properties", {{"x", {{"type", "integer"}}}}}}}}}}})
      .dump();
}

Result<ToolCallSyntax> DetectToolCallSyntax(std::string_view rendered) {
  const size_t at = rendered.rfind(kProbeName);  // the assistant's call comes after the tools' list
  if (at == std::string_view::npos) {
    return InvalidInput("tools: the model's chat template does not render an assistant's tool calls");
  }
  const std::string_view before = rendered.substr(at > 64 ? at - 64 : 0, at > 64 ? 64 : at);
  const std::string_view after = rendered.substr(at, 64);
  if (before.find(kHermesOpen) != std::string_view::npos) return ToolCallSyntax::kHermes;
  if (before.find(kMistralMarker) != std::string_view::npos) return ToolCallSyntax::kMistral;
  if (after.find("\"parameters\"") != std::string_view::npos) return ToolCallSyntax::kLlama3Json;
  return InvalidInput(
      "tools: the model's chat template writes tool calls in a syntax Shoal does not read (it reads Qwen's "
      "<tool_call> blocks, Llama 3's JSON and Mistral's [TOOL_CALLS])");
}

std::optional<ParsedOutput> ParseToolCalls(ToolCallSyntax syntax, std::string_view text, bool parallel) {
  std::optional<ParsedOutput> out;
  switch (syntax) {
    case ToolCallSyntax::kHermes: out = ParseHermes(text); break;
    case ToolCallSyntax::kLlama3Json: out = ParseLlama3(text); break;
    case ToolCallSyntax::kMistral: out = ParseMistral(text); break;
  }
  if (out && !parallel && out->calls.size() > 1) out->calls.resize(1);
  return out;
}

std::string ToolCallStream::Push(std::string_view text) {
  if (calling_) {
    held_ += text;
    return {};
  }
  std::string buffer = held_ + std::string(text);
  held_.clear();
  if (syntax_ == ToolCallSyntax::kLlama3Json) {
    // A call is the whole output: held while the output may still be one.
    if (!sent_) {
      const std::string_view start = TrimLeft(buffer);
      const bool maybe = start.empty() || start.front() == '{' ||
                         kPythonTag.substr(0, std::min(start.size(), kPythonTag.size())) ==
                             start.substr(0, std::min(start.size(), kPythonTag.size()));
      if (maybe) {
        calling_ = !start.empty();
        held_ = std::move(buffer);
        return {};
      }
    }
    sent_ = sent_ || !buffer.empty();
    return buffer;
  }
  const std::string_view marker = syntax_ == ToolCallSyntax::kHermes ? kHermesOpen : kMistralMarker;
  const size_t at = buffer.find(marker);
  if (at != std::string::npos) {
    calling_ = true;
    held_ = buffer.substr(at);
    buffer.resize(at);
  } else {
    const size_t partial = PartialMarker(buffer, marker);
    held_ = buffer.substr(buffer.size() - partial);
    buffer.resize(buffer.size() - partial);
  }
  sent_ = sent_ || !buffer.empty();
  return buffer;
}

Result<std::string> ToolCallGrammar(ToolCallSyntax syntax, std::string_view tools_json,
                                    const std::optional<std::string>& only, bool parallel) {
  if (syntax == ToolCallSyntax::kMistral) {
    return InvalidInput("tool_choice: this model's calls begin with its [TOOL_CALLS] control token, which Shoal cannot "
                        "hold the output to; use \"auto\"");
  }
  const Json tools = Json::parse(tools_json, nullptr, /*allow_exceptions=*/false);
  if (!tools.is_array()) return InvalidInput("tools: malformed");
  std::string rules, calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& fn = tools[i]["function"];
    const std::string name = fn.value("name", "");
    if (only && name != *only) continue;
    const std::string args = "tool" + std::to_string(i) + "-args";
    const Json parameters = fn.contains("parameters") ? fn["parameters"] : Json{{"type", "object"}};
    SHOAL_ASSIGN_OR_RETURN(std::string schema_rules,
                           JsonSchemaRules(parameters.dump(), args,
                                           "tools[" + std::to_string(i) + "].function.parameters"));
    rules += schema_rules;
    const std::string head = syntax == ToolCallSyntax::kHermes
                                 ? "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": "
                                 : "{\"name\": \"" + name + "\", \"parameters\": ";
    const std::string tail = syntax == ToolCallSyntax::kHermes ? "}\n</tool_call>" : "}";
    calls += (calls.empty() ? "" : " | ") + GbnfLiteral(head) + " " + args + " " + GbnfLiteral(tail);
  }
  if (calls.empty()) return InvalidInput("tool_choice: no such tool");
  const std::string separator = syntax == ToolCallSyntax::kHermes ? "\"\\n\"" : "\"; \"";
  std::string root = "root ::= call" + (parallel ? " ( " + separator + " call )*" : std::string()) + "\n";
  return root + "call ::= " + calls + "\n" + rules + JsonRules();
}

}  // namespace shoal::structured
