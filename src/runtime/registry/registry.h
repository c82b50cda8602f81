// The runtimes built into this binary, found by the name a profile gives
// (`runtime: native`).
#pragma once

#include <string_view>

#include "runtime/runtime.h"

namespace shoal {

// The runtime of that name ("identity", "native"); null when there is none.
Runtime* FindRuntime(std::string_view name);

}  // namespace shoal
