#include "runtime/native/tokenizers/tokenizer_config.h"

namespace shoal::native::tok {
namespace {

Status ConfigError(const char* key, const char* what) {
  return Status(Code::kModelLoadFailed,
                std::string("tokenizer_config.json: ") + key + ": expected " + what);
}

}  // namespace

Result<std::optional<std::string>> ConfigToken(const nlohmann::json& config, const char* key,
                                               const char* fallback) {
  auto v = config.find(key);
  if (v == config.end()) return std::optional<std::string>(fallback);
  if (v->is_null()) return std::optional<std::string>();
  if (v->is_string()) return std::optional<std::string>(v->get<std::string>());
  if (v->is_object()) {
    auto c = v->find("content");
    if (c != v->end() && c->is_string()) return std::optional<std::string>(c->get<std::string>());
  }
  return ConfigError(key, "a token");
}

Result<bool> ConfigFlag(const nlohmann::json& config, const char* key, bool fallback) {
  auto v = config.find(key);
  if (v == config.end() || v->is_null()) return fallback;
  if (!v->is_boolean()) return ConfigError(key, "true or false");
  return v->get<bool>();
}

}  // namespace shoal::native::tok
