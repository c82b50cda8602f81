// Chat templates: a model's `chat_template` (Jinja) rendered into a prompt.
//
// The interpreter covers the Jinja subset that real chat templates use
// (Llama-3/3.1/3.2, Qwen2.5, Qwen3, Gemma-3, Mistral v0.3), with the
// semantics of @huggingface/jinja, against which the output is checked byte
// for byte (tests/chat/reference_test.sh):
//   - statements: if/elif/else, for (tuple targets, `if` filter, else, loop.*),
//     set (names, tuples, `ns.attr`); comments; whitespace control `{%-`/`-%}`,
//     `{{-`/`-}}`, `{#-`/`-#}`, with trim_blocks and lstrip_blocks on and one
//     trailing newline of the source dropped, as @huggingface/jinja and
//     transformers do.
//   - values: undefined, none, bool, int, float, string, list, tuple, dict,
//     namespace(); literals of each.
//   - operators: and/or/not, == != < > <= >=, in/not in, + - * / // % **, ~,
//     unary -/+, `x if c else y`, subscripts, slices, attributes, calls.
//   - filters: length, tojson(indent=), trim, upper, lower, default(v, b),
//     join(sep), first, last, items, list, selectattr/rejectattr, string, int.
//   - tests: defined, undefined, none, string, number, integer, boolean,
//     mapping, iterable, sequence, true, false, equalto/eq.
//   - methods: str.startswith/endswith/split/strip/lstrip/rstrip/replace/
//     upper/lower/title/capitalize, dict.get/items/keys/values.
//   - globals: namespace(), raise_exception(msg), strftime_now(fmt).
// Not supported: macros, call/filter blocks, break/continue, block set and
// {% generation %} (Parse fails naming the statement); range(), map,
// reject and other filters, tests and methods not listed (Render fails).
//
// Where @huggingface/jinja differs from Python Jinja2 this follows the
// former: str.strip/lstrip/rstrip ignore their argument and strip
// whitespace; booleans print as "true"/"false"; `==` on lists and dicts
// compares identity; `+` joins a string and a number; a number that is
// integral in the JSON is an int; a `set` in a loop body carries to the next
// iteration. It differs from both in small ways no template relies on:
// upper/lower/title/capitalize change ASCII letters only; `|length`, indexing
// and slicing count code points (@huggingface/jinja's `length` counts UTF-16
// units); a string never equals a number (JavaScript has "1" == 1).
//
// Limits, so a hostile template can neither hang nor exhaust memory: nesting
// deeper than 256 (template syntax or JSON variables) is refused; one Render
// may take 10,000,000 evaluation steps (loop iterations included) and build
// 256 MiB of strings and lists in total; no string, the prompt included, may
// exceed 16 MiB; tojson's indent is at most 64. Past a limit Render fails
// with INVALID_INPUT.
//
// Errors are values: Parse fails with MODEL_LOAD_FAILED and the line and
// column; Render fails with INVALID_INPUT, carrying the template's own
// message when it calls raise_exception(). Nothing throws.
//
// Threading: a parsed template is immutable; Render may run on many threads
// at once (each call owns all of its state).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::native {

// A parsed chat template. Render takes the template's variables as a JSON
// object (messages, add_generation_prompt, bos_token, eos_token, tools, any
// extra kwargs such as enable_thinking) and returns the rendered prompt.
// nlohmann::json orders object keys, so `tojson` prints them sorted.
class ChatTemplate {
 public:
  static Result<std::unique_ptr<ChatTemplate>> Parse(std::string_view source);
  virtual ~ChatTemplate() = default;
  virtual Result<std::string> Render(const nlohmann::json& variables) const = 0;
};

// What a model directory's tokenizer_config.json says about chat: the
// template ("chat_template" as a string, or the entry named "default" of a
// list of {name, template}; else a chat_template.jinja or chat_template.json
// beside it) and the bos/eos token strings ("bos_token" may
// be a string, an object {"content": ...}, or null).
struct ChatConfig {
  std::unique_ptr<ChatTemplate> chat_template;  // null when the file has none
  std::string bos_token, eos_token;
};
Result<ChatConfig> LoadChatConfig(const std::string& tokenizer_config_path);

}  // namespace shoal::native
