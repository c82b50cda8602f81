#include "runtime/upstream/upstream_options.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace shoal::upstream {

Result<UpstreamOptions> ParseUpstreamOptions(const RuntimeOptions& options, const std::string& id) {
  UpstreamOptions o;
  o.model = id;
  OptionReader read(options);
  SHOAL_RETURN_IF_ERROR(read.String("base_url", &o.base_url));
  SHOAL_RETURN_IF_ERROR(read.String("model", &o.model));
  SHOAL_RETURN_IF_ERROR(read.String("api_key_env", &o.api_key_env));
  SHOAL_RETURN_IF_ERROR(read.Count("timeout_ms", 100, 3'600'000, &o.timeout_ms));
  SHOAL_RETURN_IF_ERROR(read.Count("connect_timeout_ms", 10, 600'000, &o.connect_timeout_ms));
  SHOAL_RETURN_IF_ERROR(read.Count("inputs_per_call", 1, 65'536, &o.inputs_per_call));
  SHOAL_RETURN_IF_ERROR(read.Finish());
  if (o.base_url.empty()) return read.Invalid("base_url", "missing (the server's OpenAI API root, e.g. http://host:8000/v1)");
  if (o.base_url.rfind("http://", 0) != 0 && o.base_url.rfind("https://", 0) != 0) {
    return read.Invalid("base_url", "expected an http:// or https:// URL");
  }
  while (!o.base_url.empty() && o.base_url.back() == '/') o.base_url.pop_back();
  if (o.model.empty()) return read.Invalid("model", "must not be empty");
  return o;
}

uint32_t ServerCallLimit(std::string_view props_json, std::string_view info_json) {
  for (const auto& [text, key] : {std::pair{props_json, "total_slots"}, {info_json, "max_client_batch_size"}}) {
    const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    const auto v = j.is_object() ? j.find(key) : j.end();
    if (v != j.end() && v->is_number_unsigned() && v->get<uint64_t>() > 0) {
      return static_cast<uint32_t>(std::min<uint64_t>(v->get<uint64_t>(), 65'536));
    }
  }
  return 0;
}

}  // namespace shoal::upstream
