// The JSON the admin routes share (admin_api.cc, admin_versions.cc): a
// body read as one object, and a model version as the routes show it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "admin/catalog_admin.h"
#include "common/status.h"

namespace shoal::gateway {

inline Result<nlohmann::json> ParseObject(const std::string& body) {
  nlohmann::json o = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return InvalidInput("the body must be a JSON object");
  return o;
}

// A version: its spec, where it stands, its promotion record, and how its
// golden outputs agree with the serving version's.
inline nlohmann::json VersionJson(const admin::VersionView& v) {
  nlohmann::json o = nlohmann::json::parse(v.version.spec.ToJson());
  o["state"] = VersionStateName(v.state);
  o["record"] = nlohmann::json::parse(v.version.ToJson())["record"];
  if (!v.golden_vs_serving.empty()) {
    o["golden_vs_serving"] = nlohmann::json::parse(v.golden_vs_serving);
    o["golden_vs_serving"]["serving"] = v.serving;
  }
  return o;
}

}  // namespace shoal::gateway
