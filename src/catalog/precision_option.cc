#include "catalog/precision_option.h"

#include <nlohmann/json.hpp>

namespace shoal {

std::string PrecisionOf(std::string_view runtime_options_json) {
  const nlohmann::json o = nlohmann::json::parse(runtime_options_json, nullptr, false);
  if (o.is_object()) {
    if (auto it = o.find("precision"); it != o.end() && it->is_string()) return it->get<std::string>();
  }
  return "f32";
}

std::string WithPrecision(std::string_view runtime_options_json, std::string_view precision) {
  nlohmann::json o = nlohmann::json::parse(runtime_options_json, nullptr, false);
  if (!o.is_object()) o = nlohmann::json::object();
  o["precision"] = precision;
  return o.dump();
}

}  // namespace shoal
