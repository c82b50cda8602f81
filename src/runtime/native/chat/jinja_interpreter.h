// The chat-template interpreter: runs a parsed Program over the render's
// variables and returns the text. One call owns all of its state (scopes,
// budget, namespaces), so a Program may be rendered on many threads at once.
//
// Scoping is @huggingface/jinja's: `set` assigns in the innermost scope; a
// for loop has one scope for all its iterations (so a `set` in the body is
// gone after the loop, but a namespace attribute set in it is not); `if`
// opens none.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "runtime/native/chat/jinja_ast.h"
#include "runtime/native/chat/jinja_value.h"

namespace shoal::native::jinja {

// `variables` is a dict (the Render JSON object); `source` is the template
// text, for error positions. Errors are INVALID_INPUT: "chat template line L,
// column C: ...", or exactly the message a template passed to raise_exception.
Result<std::string> Render(std::string_view source, const Program& program, const Value& variables);

}  // namespace shoal::native::jinja
