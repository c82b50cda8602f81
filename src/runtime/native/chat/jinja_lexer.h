// The chat-template lexer: source text to tokens, exactly as @huggingface/jinja
// splits it with trim_blocks and lstrip_blocks on (its Template's settings,
// and transformers'):
//   - one trailing newline of the source is dropped;
//   - lstrip_blocks: spaces and tabs that start a line before `{%`, `{#` or
//     `{-` are dropped;
//   - trim_blocks: a newline right after `%}`, `#}` or `-}` is dropped;
//   - `{%-`, `{{-`, `{#-` strip the whitespace before them, `-%}`, `-}}`,
//     `-#}` the whitespace after them;
//   - comments become Comment tokens (they separate text but print nothing).
// Every token records where it starts in the original source, for errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::native::jinja {

enum class TokenType : uint8_t {
  kText,             // template text between tags
  kNumber,           // 12, 1.5, and -1 where a sign cannot be an operator
  kString,           // 'a' or "a", escapes decoded
  kIdentifier,       // names and keywords (if, in, not, true, ...)
  kEquals,           // =
  kOpenParen,        // (
  kCloseParen,       // )
  kOpenStatement,    // {%
  kCloseStatement,   // %}
  kOpenExpression,   // {{
  kCloseExpression,  // }}
  kOpenBracket,      // [
  kCloseBracket,     // ]
  kOpenBrace,        // {
  kCloseBrace,       // }
  kComma,
  kDot,
  kColon,
  kPipe,
  kAdditive,        // + - ~
  kMultiplicative,  // * / // %
  kPower,           // **
  kComparison,      // == != < > <= >=
  kUnary,           // - or + that is a sign
  kComment,         // {# ... #}
};

struct Token {
  TokenType type;
  std::string value;
  uint32_t offset;  // of the token's first byte in the original source
};

// Fails with MODEL_LOAD_FAILED naming the line and column.
Result<std::vector<Token>> Tokenize(std::string_view source);

// "line 3, column 14" of a byte offset into `source`.
std::string Where(std::string_view source, size_t offset);

}  // namespace shoal::native::jinja
