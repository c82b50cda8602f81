// Tool calls in a model's own syntax: which syntax a chat template writes,
// reading calls out of generated text, holding text back while a call may
// be starting, and the grammar that makes the output a call.
//
// The syntaxes (the families Shoal serves):
//   kHermes      Qwen2.5 / Qwen3: <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>,
//                one block per call
//   kLlama3Json  Llama 3.1 / 3.2: {"name": "f", "parameters": {...}} as the whole
//                output (after an optional <|python_tag|>), calls joined by ";"
//   kMistral     [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
// A template's syntax is read from how it renders an assistant message
// holding one call (DetectToolCallSyntax), not from the model's name.
//
// Threading: values and pure functions; a ToolCallStream is one sequence's.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::structured {

enum class ToolCallSyntax { kHermes, kLlama3Json, kMistral };

// The probe DetectToolCallSyntax reads: render these messages (an
// assistant's call of kProbeName with arguments {"x": 1}) with these tools.
inline constexpr std::string_view kProbeName = "shoal_probe_function";
std::string ProbeMessagesJson();
std::string ProbeToolsJson();
// INVALID_INPUT when the rendering shows no syntax Shoal reads.
Result<ToolCallSyntax> DetectToolCallSyntax(std::string_view rendered);

struct ParsedCall {
  std::string name;
  std::string arguments;  // a JSON object's text
};
struct ParsedOutput {
  std::string content;  // the text outside the calls
  std::vector<ParsedCall> calls;
};

// The calls in `text`; nullopt when the text starts a call it does not
// finish, or holds one that is not well formed (a name and an object of
// arguments), so that it goes back to the client as text. Unless
// `parallel`, only the first call is kept (parallel_tool_calls: false; a
// model that writes more has the rest dropped).
std::optional<ParsedOutput> ParseToolCalls(ToolCallSyntax syntax, std::string_view text, bool parallel = true);

// Streams text, holding back from where a call may begin: what Push
// returns may go to the client now; held() is what waits for the end.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallSyntax syntax) : syntax_(syntax) {}
  std::string Push(std::string_view text);
  const std::string& held() const { return held_; }
  bool any_sent() const { return sent_; }

 private:
  const ToolCallSyntax syntax_;
  std::string held_;
  bool calling_ = false;  // a call's start was seen: everything is held
  bool sent_ = false;
};

// GBNF whose sentences are calls in `syntax` of the tools in `tools_json`
// (OpenAI's array) — only of `only` when given — each call's arguments a
// document of its function's parameters schema; several calls when
// `parallel`. Errors name tools[i].function.parameters.
Result<std::string> ToolCallGrammar(ToolCallSyntax syntax, std::string_view tools_json,
                                    const std::optional<std::string>& only, bool parallel);

}  // namespace shoal::structured
