// Chat templates (runtime/native/chat/chat_template.h): Parse, and when it
// parses, Render a small fixed conversation (with and without a generation
// prompt, with tools). Render may fail (raise_exception, a limit), but must
// not crash, hang or run out of memory; the result respects the 16 MiB
// string limit.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "runtime/native/chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using shoal::native::ChatTemplate;
  auto tmpl = ChatTemplate::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!tmpl.ok()) return 0;
  static const nlohmann::json kVariables = nlohmann::json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Hi — what is 2+2?"},
      {"role": "assistant", "content": "4"},
      {"role": "user", "content": "And 3+3?"}
    ],
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>",
    "enable_thinking": false
  })");
  static const nlohmann::json kWithTools = [] {
    nlohmann::json v = kVariables;
    v["add_generation_prompt"] = false;
    v["tools"] = nlohmann::json::parse(R"([{"type": "function", "function": {"name": "add",
      "description": "Adds", "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}])");
    return v;
  }();
  for (const nlohmann::json* vars : {&kVariables, &kWithTools}) {
    auto out = (*tmpl)->Render(*vars);
    if (out.ok()) FUZZ_CHECK(out->size() <= (16u << 20));
  }
  return 0;
}
