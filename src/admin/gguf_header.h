// What registration needs from a GGUF file before any runtime loads it:
// its architecture (general.architecture), which says whether it generates
// or embeds, and its license (general.license) for the promotion record.
// Reads the header's key/value pairs up to the key asked for; the runtime
// (llama.cpp) reads the rest. Format: ggml's docs/gguf.md —
// magic "GGUF", version (2 or 3), tensor and key counts, then keys as
// length-prefixed strings, each with a typed value.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::admin {

// INVALID_INPUT, saying what is wrong, for a file that is not a GGUF or has
// no architecture.
Result<std::string> GgufArchitecture(const std::string& path);

// The string value of `key` in the header: NOT_FOUND when it has none,
// INVALID_INPUT for a file that is not a GGUF.
Result<std::string> GgufString(const std::string& path, std::string_view key);

}  // namespace shoal::admin
