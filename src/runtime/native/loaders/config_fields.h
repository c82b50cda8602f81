// Typed fields of a Hugging Face config.json, read with the defaults of the
// transformers config class (Hugging Face writes only the values that
// differ from them). Errors are INVALID_INPUT naming the field as
// "config.json: <where><key>: why".
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "common/status.h"

namespace shoal::native {

Status ConfigError(const std::string& key, const std::string& why);

// architectures[0], or "" when there is none.
std::string ConfigArchitecture(const nlohmann::json& config);

// A whole number in [1, 2^20] (sizes, counts), or `fallback` when absent.
Result<uint32_t> ConfigCount(const nlohmann::json& c, const std::string& where, const char* key, uint32_t fallback);
// Any whole number (token ids), or `fallback` when absent (or null).
Result<int64_t> ConfigInt(const nlohmann::json& c, const std::string& where, const char* key, int64_t fallback);
Result<double> ConfigNumber(const nlohmann::json& c, const std::string& where, const char* key, double fallback);
Result<std::string> ConfigString(const nlohmann::json& c, const std::string& where, const char* key,
                                 const std::string& fallback);

}  // namespace shoal::native
