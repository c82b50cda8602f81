// The chat-template parser: tokens to a Program, with @huggingface/jinja's
// grammar and precedence (loosest first): `x if c else y`, or, and, not,
// comparisons and in/not in, + - ~, * / // %, **, `is` tests, `|` filters,
// unary - +, then calls, attributes and subscripts.
#pragma once

#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/native/chat/jinja_ast.h"
#include "runtime/native/chat/jinja_lexer.h"

namespace shoal::native::jinja {

// Fails with MODEL_LOAD_FAILED naming the line and column (of `source`) of the
// first token it cannot place, and on syntax nested deeper than kMaxNesting.
Result<Program> Parse(std::string_view source, const std::vector<Token>& tokens);

}  // namespace shoal::native::jinja
