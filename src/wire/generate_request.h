// Generation requests as clients send them, parsed into one GenerateRequest
// (generate.h) whatever the route. Errors are 400 INVALID_INPUT naming the
// field ("temperature: must be between 0 and 2, got 3"), or 413
// PAYLOAD_TOO_LARGE for a prompt over limits.max_item_bytes. A JSON null
// counts as an absent field (clients send "stop": null).
//
// OpenAI chat (POST /v1/chat/completions):
//   {"model", "messages": [{"role", "content": str | [{"type": "text", "text"}]}],
//    "max_tokens" | "max_completion_tokens", "temperature", "top_p", "seed",
//    "stop": str | [str] (≤ 4), "stream", "stream_options": {"include_usage"},
//    "logprobs": bool, "top_logprobs": 0..20, "n": 1..128, "presence_penalty",
//    "frequency_penalty", "logit_bias": {"id": bias},
//    "response_format": {"type": "text" | "json_object"} | {"type": "json_schema",
//                        "json_schema": {"name", "schema", "strict"}},
//    "tools": [{"type": "function", "function": {...}}], "tool_choice",
//    "parallel_tool_calls", messages with "tool_calls" / "tool_call_id",
//    extensions as vLLM/SGLang: "top_k" (-1 or 0: off), "repetition_penalty",
//    "min_tokens", "chat_template_kwargs",
//    "add_generation_prompt", "ignore_eos", "stop_token_ids"}
//   OpenAI fields Shoal does not implement pass only at the value that asks
//   for nothing ("functions": [], "function_call": "none",
//   ...) and are refused otherwise; unknown fields are refused.
// OpenAI completions (POST /v1/completions):
//   {"model", "prompt": str | [str], "max_tokens" (default 16), the sampling
//    fields above, "logprobs": int 0..5 (the chosen tokens' logprobs and
//    that many alternatives), "echo": false, "best_of": 1, "suffix": null},
//   the same refusals as chat
// Native (POST /v1/generate/{model}), strict (unknown fields are errors):
//   {"prompt": str} or {"messages": [...], "add_generation_prompt": true,
//    "chat_template_kwargs": {...}}, plus "max_tokens" (default: until a stop
//    or the model's context is full), "temperature", "top_p", "top_k", "seed",
//    "stop", "stop_token_ids", "ignore_eos", the logit adjustments above,
//    "logprobs": bool, "top_logprobs", "stream", "lora": "adapter", "response_format" (as
//    chat, or {"type": "regex", "pattern": str} or {"type": "choice",
//    "choices": [str]})}
#pragma once

#include <string_view>

#include "common/status.h"
#include "wire/encode_request.h"
#include "wire/generate.h"

namespace shoal::wire {

// OpenAI's default max_tokens for /v1/completions.
inline constexpr uint32_t kCompletionsDefaultMaxTokens = 16;

Status ParseChatCompletions(std::string_view body, const ParseLimits& limits, GenerateRequest* out);
Status ParseCompletions(std::string_view body, const ParseLimits& limits, GenerateRequest* out);
// `model` is the one the path names.
Status ParseGenerate(std::string_view body, std::string_view model, const ParseLimits& limits,
                     GenerateRequest* out);

}  // namespace shoal::wire
