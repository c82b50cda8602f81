// The tokenizer of a model directory: its tokenizer.json, or — where a
// checkpoint ships only a slow tokenizer's files, as SigLIP's do — the
// tokenizer.json a converter would make of them (siglip_tokenizer.h).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/native/tokenizers/tokenizer.h"

namespace shoal::native {

// kModelLoadFailed names the file at fault; a directory with neither
// tokenizer.json nor a slow tokenizer read here names tokenizer.json.
Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& dir);

}  // namespace shoal::native
