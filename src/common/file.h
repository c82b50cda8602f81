// Whole-file reads for loaders (configs, vocabularies, manifests), and
// whole-file writes that never leave a part.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal {

// The bytes of `path`; INVALID_INPUT naming the path and the OS error when it
// cannot be opened or read.
Result<std::string> ReadFile(const std::string& path);

// Writes `bytes` to `path` through a temporary file renamed over it, so a
// reader (or a process that dies meanwhile) sees the old content or the new,
// never a part. INTERNAL naming the path and the OS error.
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace shoal
