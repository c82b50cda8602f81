#include "runtime/llamacpp/prompt.h"

namespace shoal::llamacpp {
namespace {

std::string SpecialText(const llama_vocab* vocab, llama_token id) {
  return id == LLAMA_TOKEN_NULL ? std::string() : TokenPiece(vocab, id, true);
}

}  // namespace

Result<std::unique_ptr<PromptBuilder>> PromptBuilder::Create(const llama_model* model) {
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::unique_ptr<native::ChatTemplate> parsed;
  if (const char* source = llama_model_chat_template(model, nullptr)) {
    auto t = native::ChatTemplate::Parse(source);
    if (!t.ok()) return Status(Code::kModelLoadFailed, "the GGUF's chat template: " + t.status().message());
    parsed = std::move(t).value();
  }
  std::unique_ptr<PromptBuilder> b(new PromptBuilder(vocab, std::move(parsed)));
  b->bos_token_ = SpecialText(vocab, llama_vocab_bos(vocab));
  b->eos_token_ = SpecialText(vocab, llama_vocab_eos(vocab));
  return b;
}

Result<std::string> PromptBuilder::RenderChat(const GenerationJob& job) const {
  if (!template_) return InvalidInput("the model's GGUF has no chat template (tokenizer.chat_template)");
  nlohmann::json vars = nlohmann::json::object();
  if (!job.chat_template_kwargs_json.empty()) {
    vars = nlohmann::json::parse(job.chat_template_kwargs_json, nullptr, false);
    if (!vars.is_object()) return InvalidInput("chat_template_kwargs: expected a JSON object");
  }
  nlohmann::json messages = nlohmann::json::array();
  for (const ChatTurn& t : job.messages) messages.push_back({{"role", t.role}, {"content", t.content}});
  // The conversation's own variables win over kwargs of the same name.
  vars["messages"] = std::move(messages);
  vars["add_generation_prompt"] = job.add_generation_prompt;
  vars["bos_token"] = bos_token_;
  vars["eos_token"] = eos_token_;
  return template_->Render(vars);
}

Result<std::vector<int32_t>> PromptBuilder::Build(const GenerationJob& job) const {
  if (!job.chat) return TokenizeText(vocab_, job.prompt, job.add_special_tokens, true);
  SHOAL_ASSIGN_OR_RETURN(std::string text, RenderChat(job));
  // The rendered prompt spells its special tokens (BOS included) itself.
  return TokenizeText(vocab_, text, false, true);
}

}  // namespace shoal::llamacpp
