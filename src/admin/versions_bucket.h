// The keys and reads of the `shoal_model_versions` bucket
// (catalog/model_version.h), shared by CatalogAdmin's versions and
// evaluations (catalog_versions.cc, catalog_evaluations.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "queue/nats.h"

namespace shoal::admin::versions_bucket {

std::string HeadKey(std::string_view id);                         // <token>
std::string RecordKey(std::string_view id, uint32_t version);     // <token>.<N>
std::string EvalKey(std::string_view id, std::string_view name);  // <token>.eval.<name token>
std::string EvalPrefix(std::string_view id);                      // <token>.eval.

// The value of `key` and its revision; NOT_FOUND without one.
Result<std::string> Get(kvStore* kv, const std::string& key, uint64_t* revision = nullptr);
// Every key of the bucket.
Result<std::vector<std::string>> Keys(kvStore* kv);

}  // namespace shoal::admin::versions_bucket
