// The items of a JSON answer, read the way several tests read them.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace shoal::testing {

// An encode item's dense vector.
inline std::vector<float> Dense(const nlohmann::json& item) { return item["dense"].get<std::vector<float>>(); }

}  // namespace shoal::testing
