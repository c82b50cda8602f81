// PromptBuilder: a generation job's prompt as token ids — the completion
// text tokenized, or the conversation rendered with the GGUF's own chat
// template (`tokenizer.chat_template`, through Shoal's Jinja interpreter,
// runtime/native/chat) and tokenized with its special tokens parsed.
//
// Threading: immutable once made; Build runs on any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/llamacpp/vocab.h"
#include "runtime/native/chat/chat_template.h"
#include "runtime/streaming_generator.h"

namespace shoal::llamacpp {

class PromptBuilder {
 public:
  // MODEL_LOAD_FAILED when the GGUF's template does not parse.
  static Result<std::unique_ptr<PromptBuilder>> Create(const llama_model* model);

  Result<std::vector<int32_t>> Build(const GenerationJob& job) const;
  // The conversation through the chat template; INVALID_INPUT when the model
  // has none or the template refuses the conversation.
  Result<std::string> RenderChat(const GenerationJob& job) const;

 private:
  PromptBuilder(const llama_vocab* vocab, std::unique_ptr<native::ChatTemplate> chat_template)
      : vocab_(vocab), template_(std::move(chat_template)) {}

  const llama_vocab* vocab_;
  std::unique_ptr<native::ChatTemplate> template_;  // null: the GGUF has none
  std::string bos_token_, eos_token_;               // their text, for the template
};

}  // namespace shoal::llamacpp
