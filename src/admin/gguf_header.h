// The one fact registration needs from a GGUF file before any runtime
// loads it: its architecture (general.architecture), which says whether it
// generates or embeds. Reads the header's key/value pairs up to that key;
// the runtime (llama.cpp) reads the rest. Format: ggml's docs/gguf.md —
// magic "GGUF", version (2 or 3), tensor and key counts, then keys as
// length-prefixed strings, each with a typed value.
#pragma once

#include <string>

#include "common/status.h"

namespace shoal::admin {

// INVALID_INPUT, saying what is wrong, for a file that is not a GGUF or has
// no architecture.
Result<std::string> GgufArchitecture(const std::string& path);

}  // namespace shoal::admin
