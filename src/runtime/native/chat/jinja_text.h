// Text helpers for the chat-template interpreter, with JavaScript's
// definitions, because @huggingface/jinja (the reference the output must match
// byte for byte) is written in it: what counts as whitespace (String.trim, the
// lexer's \s), how a number prints (Number.prototype.toString) and how
// JSON.stringify quotes a string. Strings are UTF-8; "characters" are code
// points.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shoal::native::jinja {

// The byte length of the JavaScript whitespace character at `pos`, or 0.
size_t WhitespaceAt(std::string_view s, size_t pos);

std::string_view TrimStart(std::string_view s);
std::string_view TrimEnd(std::string_view s);
std::string_view Trim(std::string_view s);

// [A-Za-z0-9_]: JavaScript's \w (without the u flag).
bool IsWordChar(char c);

// The code points of `s`, each as its UTF-8 bytes (a stray byte stands alone).
std::vector<std::string_view> CodePoints(std::string_view s);
size_t CodePointCount(std::string_view s);

// Appends `s` as JSON.stringify quotes it: \" \\ \b \f \n \r \t, other
// control characters as \u00XX, everything else (non-ASCII included) as is.
void AppendJsonString(std::string_view s, std::string* out);

// Number.prototype.toString: shortest round-trip digits, exponent form
// outside [1e-6, 1e21).
std::string JsNumber(double x);

}  // namespace shoal::native::jinja
