#include "catalog/names.h"

#include <algorithm>

#include <cctype>

namespace shoal {

Status ValidateModelId(std::string_view id) {
  if (id.empty() || id.size() > 128) return InvalidInput("model id must be 1 to 128 characters");
  if (id.front() == '.' || id.front() == '/') {
    return InvalidInput("model id must not start with '.' or '/': '" + std::string(id) + "'");
  }
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '/' &&
        c != '-') {
      return InvalidInput("model id may hold only [A-Za-z0-9._/-]: '" + std::string(id) + "'");
    }
  }
  return Status::Ok();
}

Status ValidatePoolName(std::string_view pool) {
  if (pool.empty() || pool.size() > 32) return InvalidInput("pool name must be 1 to 32 characters");
  for (char c : pool) {
    if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) &&
        c != '_' && c != '-') {
      return InvalidInput("pool name may hold only [a-z0-9_-]: '" + std::string(pool) + "'");
    }
  }
  return Status::Ok();
}

Status ValidateLoraName(std::string_view name) {
  if (name.empty() || name.size() > 64) return InvalidInput("LoRA name must be 1 to 64 characters");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return InvalidInput("LoRA name may hold only [A-Za-z0-9._-]: '" + std::string(name) + "'");
    }
  }
  return Status::Ok();
}

Status ValidateArtifactDigest(std::string_view digest) {
  constexpr std::string_view kPrefix = "sha256:";
  const std::string_view hex = digest.substr(std::min(digest.size(), kPrefix.size()));
  const bool ok = digest.starts_with(kPrefix) && hex.size() == 64 &&
                  std::all_of(hex.begin(), hex.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f'); });
  if (!ok) return InvalidInput("artifact: expected \"sha256:\" and 64 lowercase hex digits, got '" + std::string(digest) + "'");
  return Status::Ok();
}

ModelRef SplitModelRef(std::string_view model) {
  const size_t colon = model.find(':');
  if (colon == std::string_view::npos) return {model, {}, false};
  return {model.substr(0, colon), model.substr(colon + 1), true};
}

}  // namespace shoal
