// The `llamacpp:` section of a model profile, parsed. Unknown options are
// refused (INVALID_INPUT naming them), as for every runtime.
//
// Threading: plain values.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "runtime/runtime_options.h"

namespace shoal::llamacpp {

struct LlamaCppOptions {
  std::string file;      // the .gguf in the model's directory; empty: the only one
  uint32_t context = 0;  // positions per sequence; 0: min(the model's n_ctx_train, 4096)
  uint32_t threads = 0;  // cores llama.cpp uses; 0: LoadContext.threads
  uint32_t poll = 0;     // its threads' polling level between steps, 0–100 (threadpool.h)
};

Result<LlamaCppOptions> ParseLlamaCppOptions(const RuntimeOptions& options);

}  // namespace shoal::llamacpp
