// The generation engine's tool calls (generation_engine.h, "Tools"): the
// model's call syntax, read once from its chat template; a sequence's call
// stream and, when a call is required, the grammar that holds it to one;
// and, at its end, the calls parsed out of its text.
#include <nlohmann/json.hpp>

#include "runtime/structured/tool_calls.h"
#include "worker/generation_engine.h"
#include "worker/generation_inputs.h"
#include "worker/generation_sequence.h"

namespace shoal::worker {

Result<structured::ToolCallSyntax> GenerationEngine::CallSyntax() {
  if (!tool_syntax_) {
    const nlohmann::json probe = nlohmann::json::parse(structured::ProbeMessagesJson());
    std::vector<ChatTurn> turns;
    for (const nlohmann::json& m : probe) {
      turns.push_back({m["role"], m["content"], m.contains("tool_calls") ? m["tool_calls"].dump() : "", "", {}});
    }
    auto rendered = gen_->RenderChat(turns, false, TemplateKwargs("", structured::ProbeToolsJson()));
    tool_syntax_ = rendered.ok() ? structured::DetectToolCallSyntax(*rendered)
                                 : Result<structured::ToolCallSyntax>(InvalidInput(
                                       "tools: the model's chat template cannot render tool calls (" +
                                       rendered.status().message() + ")"));
  }
  return *tool_syntax_;
}

Status GenerationEngine::PrepareToolCalls(Sequence& s, const wire::GenerateRequest& req) {
  SHOAL_ASSIGN_OR_RETURN(structured::ToolCallSyntax syntax, CallSyntax());
  s.tool_calls = std::make_unique<structured::ToolCallStream>(syntax);
  s.tool_syntax = syntax;
  s.parallel_tool_calls = req.parallel_tool_calls;
  using Kind = wire::ToolChoice::Kind;
  if (req.tool_choice.kind != Kind::kRequired && req.tool_choice.kind != Kind::kFunction) return Status::Ok();
  // A call is required: the output is held to one (or several).
  if (req.response_format.type != wire::ResponseFormat::Type::kText) {
    return InvalidInput("response_format: cannot hold the output while tool_choice requires a call");
  }
  std::optional<std::string> only;
  if (req.tool_choice.kind == Kind::kFunction) only = req.tool_choice.name;
  SHOAL_ASSIGN_OR_RETURN(std::string gbnf, structured::ToolCallGrammar(syntax, req.tools_json, only,
                                                                       req.parallel_tool_calls));
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<structured::TokenGrammar> grammar, grammars_.Get(gbnf, "tools"));
  s.format = std::make_unique<structured::OutputConstraint>(std::move(grammar));
  return Status::Ok();
}

void GenerationEngine::EndText(Sequence& s) {
  std::string tail = s.text->Finish();
  if (!s.tool_calls) {
    s.pending.text += tail;
    return;
  }
  s.pending.text += s.tool_calls->Push(tail);
  const std::string& held = s.tool_calls->held();
  auto parsed = structured::ParseToolCalls(s.tool_syntax, held, s.parallel_tool_calls);
  if (!parsed || parsed->calls.empty()) {
    s.pending.text += held;  // not a call after all, or a malformed one: the client gets the text
    return;
  }
  s.pending.text += parsed->content;
  for (size_t i = 0; i < parsed->calls.size(); ++i) {
    // Unique within the request: output k > 0 (n > 1) adds its index.
    const uint32_t output = s.item.work.item;
    s.pending.tool_calls.push_back({"call_" + std::string(s.item.work.request_id) + "_" +
                                        (output ? std::to_string(output) + "_" : "") + std::to_string(i),
                                    std::move(parsed->calls[i].name), std::move(parsed->calls[i].arguments)});
  }
  s.pending.finish = wire::FinishReason::kToolCalls;
}

}  // namespace shoal::worker
