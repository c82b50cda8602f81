// The Tokenize task (runtime.h) for any native model with a tokenizer.json:
// every model answers /v1/tokenize the same way.
#pragma once

#include <span>

#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/runtime.h"

namespace shoal::native {

Status RunTokenize(const Tokenizer& tokenizer, std::span<const TokenizeInput> in,
                   std::span<TokenizeOutput> out);

}  // namespace shoal::native
