// Base64 (RFC 4648), decoding: what JSON carries binary in (a tokenizer's
// precompiled charsmap, an image in a request). Encoding is the JSON
// writer's (wire/json_writer.h).
#pragma once

#include <string>
#include <string_view>

namespace shoal {

// The standard alphabet, padding optional; false on any other byte.
bool DecodeBase64(std::string_view text, std::string* out);

}  // namespace shoal
