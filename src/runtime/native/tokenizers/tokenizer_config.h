// Fields of a checkpoint's tokenizer_config.json, read with the slow
// tokenizer's defaults: what the converters (converted_tokenizers.h,
// siglip_tokenizer.h) are told. A field of the wrong type is
// kModelLoadFailed naming it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"

namespace shoal::native::tok {

// A special token: a string, or an AddedToken object with its "content";
// `fallback` where the key is absent; none where it is null.
Result<std::optional<std::string>> ConfigToken(const nlohmann::json& config, const char* key,
                                               const char* fallback);

// A flag; `fallback` where the key is absent or null.
Result<bool> ConfigFlag(const nlohmann::json& config, const char* key, bool fallback);

}  // namespace shoal::native::tok
