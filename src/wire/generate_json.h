// What generate.cc (the work-message codec) and generate_request.cc (the HTTP
// parsers) share: typed reads of nlohmann-json values whose errors name the
// field ("temperature: expected a number, got a string"), and the range
// checks both apply. Internal to src/wire; not a public header.
//
// nlohmann-json, not simdjson: generation bodies are small, and a DOM makes
// "exactly one of prompt/messages" and re-serializing chat_template_kwargs
// plain. Parsing never throws here (allow_exceptions = false, checked types);
// the one call that can (dump) is given an error handler that replaces
// invalid UTF-8 instead.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "wire/generate.h"

namespace shoal::wire::gen {

using Json = nlohmann::json;

// Parses `text` as one JSON object ("body: ..." errors).
Status ParseObject(std::string_view text, std::string_view what, Json* out);

Status Expected(std::string_view field, std::string_view want, const Json& v);

Status ReadString(const Json& v, std::string_view field, std::string* out);
Status ReadBool(const Json& v, std::string_view field, bool* out);
Status ReadNumber(const Json& v, std::string_view field, double* out);
// An integer (no fraction) within [lo, hi].
Status ReadInt(const Json& v, std::string_view field, int64_t lo, int64_t hi, int64_t* out);
// A seed: any 64-bit integer, negative ones taken as their two's complement.
Status ReadSeed(const Json& v, std::string_view field, uint64_t* out);
// A string or an array of strings (OpenAI "stop").
Status ReadStop(const Json& v, std::string_view field, std::vector<std::string>* out);
Status ReadTokenIds(const Json& v, std::string_view field, std::vector<int32_t>* out);
// An object, kept as its JSON text (bounded nesting: dumping recurses).
Status ReadObjectText(const Json& v, std::string_view field, std::string* out);
// OpenAI response_format: {"type": "text" | "json_object"} or {"type":
// "json_schema", "json_schema": {"name", "schema": {...}, "strict": bool}};
// with `native` (POST /v1/generate) also {"type": "regex", "pattern": str}
// and {"type": "choice", "choices": [str]}.
Status ReadResponseFormat(const Json& v, bool native, ResponseFormat* out);
// OpenAI messages: [{"role": str, "content": str | [{"type": "text", "text": str}] | null}].
Status ReadMessages(const Json& v, std::string_view field, std::vector<ChatMessage>* out);

// Range and consistency rules for a parsed request, shared by the HTTP
// parsers and DecodeGenerateWork; errors name the OpenAI field.
Status Validate(const GenerateRequest& r);

}  // namespace shoal::wire::gen
