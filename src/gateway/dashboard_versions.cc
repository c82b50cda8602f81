#include "gateway/dashboard_versions.h"

#include "admin/versions_bucket.h"
#include "catalog/model_version.h"
#include "catalog/precision_option.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

constexpr auto kRefresh = std::chrono::seconds(10);

json VersionRow(const ModelVersion& v, VersionState state) {
  json o = {{"version", v.version},
            {"state", VersionStateName(state)},
            {"precision",
             v.spec.runtime == "native" ? PrecisionOf(v.spec.runtime_options_json) : ""},
            {"owner", v.record.owner},
            {"registered_unix_ms", v.record.registered_unix_ms},
            {"variant", nullptr},
            {"evaluations", json::array()}};
  if (!v.record.variant_json.empty()) {
    const json g = json::parse(v.record.variant_json, nullptr, false);
    if (g.is_object())
      o["variant"] = {{"precision", g.value("precision", "")},
                      {"of", g.value("of", 0u)},
                      {"passed", g.value("passed", false)}};
  }
  for (const std::string& e : v.record.evaluations) {
    const json r = json::parse(e, nullptr, false);
    if (!r.is_object()) continue;
    o["evaluations"].push_back({{"evaluation", r.value("evaluation", "")},
                                {"passed", r.value("passed", false)},
                                {"metrics", r["metrics"]}});
  }
  return o;
}

}  // namespace

json VersionsPanel::Json() {
  const auto now = SteadyClock::now();
  if (read_at_ == SteadyClock::time_point{} || now - read_at_ >= kRefresh) {
    cached_ = Read();
    read_at_ = now;
  }
  json out = cached_;
  for (json& model : out) {
    const json& canary = model["canary"];
    if (!canary.is_object() || !canaries_) continue;
    const CanaryMonitor::View v = canaries_->Stats(model["id"].get<std::string>());
    if (v.version != canary["version"].get<uint32_t>()) continue;  // none seen here yet
    const json seen = json::parse(v.ToJson());
    for (const char* key : {"serving", "canary", "compared"}) model["canary"][key] = seen[key];
  }
  return out;
}

json VersionsPanel::Read() const {
  json out = json::array();
  if (!versions_) return out;
  auto keys = admin::versions_bucket::Keys(versions_);
  if (!keys.ok()) return out;
  for (const std::string& key : *keys) {
    if (key.find('.') != std::string::npos) continue;  // heads only
    auto text = admin::versions_bucket::Get(versions_, key);
    if (!text.ok()) continue;
    auto head = VersionHead::Parse(*text);
    if (!head.ok() || head->serving == 0) continue;
    std::vector<uint32_t> kept = {head->serving};
    for (uint32_t n : head->Pinnable()) kept.push_back(n);
    json model = {
        {"id", nullptr},
        {"serving", head->serving},
        {"rollback_target", head->rollback.empty() ? json(nullptr) : json(head->rollback.back())},
        {"canary", nullptr},
        {"versions", json::array()}};
    for (uint32_t n : kept) {
      auto record = admin::versions_bucket::Get(versions_, key + "." + std::to_string(n));
      if (!record.ok()) continue;
      auto v = ModelVersion::Parse(*record);
      if (!v.ok()) continue;
      model["id"] = v->spec.id;
      model["versions"].push_back(VersionRow(*v, head->StateOf(n)));
    }
    if (model["id"].is_null()) continue;
    if (head->canary.active()) {
      model["canary"] = json::parse(head->canary.ToJson());
    }
    out.push_back(std::move(model));
  }
  return out;
}

}  // namespace shoal::gateway
