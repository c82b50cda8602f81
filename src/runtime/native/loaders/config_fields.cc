#include "runtime/native/loaders/config_fields.h"

namespace shoal::native {

using nlohmann::json;

Status ConfigError(const std::string& key, const std::string& why) {
  return InvalidInput("config.json: " + key + ": " + why);
}

std::string ConfigArchitecture(const json& c) {
  if (c.is_object() && c.contains("architectures") && c["architectures"].is_array() &&
      !c["architectures"].empty() && c["architectures"][0].is_string()) {
    return c["architectures"][0].get<std::string>();
  }
  return "";
}

Result<uint32_t> ConfigCount(const json& c, const std::string& where, const char* key, uint32_t fallback) {
  if (!c.contains(key)) return fallback;
  if (!c[key].is_number_integer() || c[key].get<int64_t>() < 1 || c[key].get<int64_t>() > (1 << 20)) {
    return ConfigError(where + key, "expected a positive whole number");
  }
  return static_cast<uint32_t>(c[key].get<int64_t>());
}

Result<int64_t> ConfigInt(const json& c, const std::string& where, const char* key, int64_t fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_number_integer()) return ConfigError(where + key, "expected a whole number");
  return c[key].get<int64_t>();
}

Result<double> ConfigNumber(const json& c, const std::string& where, const char* key, double fallback) {
  if (!c.contains(key)) return fallback;
  if (!c[key].is_number()) return ConfigError(where + key, "expected a number");
  return c[key].get<double>();
}

Result<std::string> ConfigString(const json& c, const std::string& where, const char* key,
                                 const std::string& fallback) {
  if (!c.contains(key)) return fallback;
  if (!c[key].is_string()) return ConfigError(where + key, "expected a string");
  return c[key].get<std::string>();
}

}  // namespace shoal::native
