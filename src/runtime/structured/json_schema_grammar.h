// JSON output through llama.cpp's grammar sampler: GBNF grammars (the
// format of llama.cpp's grammars/README.md) whose sentences are any JSON
// object (response_format json_object) or exactly the documents a JSON
// Schema accepts (json_schema). A keyword Shoal cannot enforce is refused
// with INVALID_INPUT naming where it is, never dropped: whatever the
// grammar lets a model write validates.
//
// The subset (docs/api.md, "Structured output"): `type` (one or a list),
// `properties`, `required`, `additionalProperties` (only declared
// properties are written, in their order; with none declared, a schema for
// the values of a map), `items`, `minItems`, `maxItems`, `enum`, `const`,
// `anyOf`, `$ref` into `$defs` or `definitions` (recursion allowed),
// `minLength`, `maxLength`, `format` date, time, date-time and uuid (by
// their shape); annotations (title, description, default, examples, ...)
// change nothing. Refused: pattern, numeric bounds, oneOf, allOf, not,
// conditionals, prefixItems, uniqueItems, other formats.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::structured {

// Any JSON object.
std::string JsonObjectGrammar();

// The documents `schema_json` (a JSON Schema's text) accepts; INVALID_INPUT
// for a schema outside the subset, malformed, or too large.
Result<std::string> JsonSchemaGrammar(std::string_view schema_json);

// For grammars that hold several schemas: one schema's rules alone, its
// documents the rule `name` (its other rules named `name`-r<N>), using the
// shared JSON rules (JsonRules: ws, value, object, string, ...) that the
// whole grammar adds once. Errors name `field`.
Result<std::string> JsonSchemaRules(std::string_view schema_json, const std::string& name, const std::string& field);
std::string JsonRules();

}  // namespace shoal::structured
