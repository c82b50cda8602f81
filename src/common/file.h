// Whole-file reads for loaders (configs, vocabularies, manifests).
#pragma once

#include <string>

#include "common/status.h"

namespace shoal {

// The bytes of `path`; INVALID_INPUT naming the path and the OS error when it
// cannot be opened or read.
Result<std::string> ReadFile(const std::string& path);

}  // namespace shoal
