#include "catalog/names.h"

#include <algorithm>

#include <cctype>

#include "common/hex.h"

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
  if (!digest.starts_with(kPrefix) || !IsSha256Hex(hex)) return InvalidInput("artifact: expected \"sha256:\" and 64 lowercase hex digits, got '" + std::string(digest) + "'");
  return Status::Ok();
}

ModelRef SplitModelRef(std::string_view model) {
  const size_t colon = model.find(':');
  if (colon == std::string_view::npos) return {model, {}, false};
  return {model.substr(0, colon), model.substr(colon + 1), true};
}

Result<VersionRef> SplitVersionRef(std::string_view name) {
  const size_t at = name.rfind('@');
  if (at == std::string_view::npos) return VersionRef{name, 0};
  const std::string_view digits = name.substr(at + 1);
  uint64_t version = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || version > (uint64_t{1} << 31)) {
      version = 0;
      break;
    }
    version = version * 10 + static_cast<uint64_t>(c - '0');
  }
  if (version == 0 || version > (uint64_t{1} << 31)) {
    return InvalidInput("'" + std::string(name) + "': a version is 'model@N', N a whole number from 1");
  }
  return VersionRef{name.substr(0, at), static_cast<uint32_t>(version)};
}

std::string VersionedName(std::string_view id, uint32_t version) {
  return std::string(id) + "@" + std::to_string(version);
}

Status ValidateServedName(std::string_view name) {
  SHOAL_ASSIGN_OR_RETURN(VersionRef ref, SplitVersionRef(name));
  return ValidateModelId(ref.id);
}

}  // namespace shoal
