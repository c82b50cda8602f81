// AdminApi's routes for versions, evaluations and canaries
// (admin_api.h): /v1/admin/models/{id}/versions[/{n}], /promote,
// /rollback, /evaluations[/{name}], /evaluate, /canary, /quantize.
#include <nlohmann/json.hpp>

#include "admin/catalog_admin.h"
#include "common/log.h"
#include "gateway/admin_api.h"
#include "gateway/admin_bodies.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

json HeadJson(const VersionHead& head) {
  json o = json::parse(head.ToJson());
  o["rollback_target"] = head.rollback.empty() ? json(nullptr) : json(head.rollback.back());
  o.erase("last");
  return o;
}

json EvalSetJson(const admin::EvalSet& set) {
  return json{{"evaluation", set.name},
              {"task", set.task},
              {"examples", set.size()},
              {"thresholds", set.thresholds},
              {"source", set.source}};
}

}  // namespace

http::Response AdminApi::ServeVersions(const http::Request& req, const std::string& id,
                                       std::string_view route, const std::string& request_id,
                                       const std::string& who) {
  auto fail = [&](const Status& s) { return http::ErrorResponse(s, request_id); };
  admin::CatalogAdmin admin(models_, versions_, js_);
  admin.SetServe(options_.serve);
  if (route == "canary") return ServeCanary(req, id, admin, fail, who);
  if (route == "evaluations") {
    if (req.method == "GET") {
      auto sets = admin.Evaluations(id);
      if (!sets.ok()) return fail(sets.status());
      json data = json::array();
      for (const auto& set : *sets) data.push_back(EvalSetJson(set));
      return http::JsonResponse(200, json{{"object", "list"}, {"data", data}}.dump());
    }
    if (req.method != "POST")
      return fail(InvalidInput(req.method + " " + req.path + ": use GET or POST"));
    auto set = admin.AttachEvaluation(id, req.body);
    if (!set.ok()) return fail(set.status());
    spdlog::info("admin: evaluation {} ({} examples of {}) attached to {}", set->name, set->size(),
                 set->task, id);
    return http::JsonResponse(201, EvalSetJson(*set).dump());
  }
  if (route.starts_with("evaluations/")) {
    if (req.method != "DELETE")
      return fail(InvalidInput(req.method + " " + req.path + ": use DELETE"));
    const std::string name(route.substr(12));
    if (Status s = admin.DetachEvaluation(id, name); !s.ok()) return fail(s);
    return http::JsonResponse(200,
                              json{{"model", id}, {"evaluation", name}, {"deleted", true}}.dump());
  }
  if (route == "evaluate") {
    if (req.method != "POST") return fail(InvalidInput(req.method + " " + req.path + ": use POST"));
    auto o = ParseObject(req.body.empty() ? "{}" : req.body);
    if (!o.ok()) return fail(o.status());
    uint32_t version = 0;
    std::vector<admin::EvalSet> sets;
    for (auto it = o->begin(); it != o->end(); ++it) {
      if (it.key() == "version" && it->is_number_unsigned() && it->get<uint64_t>() > 0 &&
          it->get<uint64_t>() <= UINT32_MAX) {
        version = it->get<uint32_t>();
      } else if (it.key() == "set" && it->is_string()) {
        auto set = admin::ParseEvalSet(it->get<std::string>());
        if (!set.ok()) return fail(set.status());
        sets.push_back(std::move(set).value());
      } else {
        return fail(InvalidInput("evaluate takes {\"version\"?: n, \"set\"?: \"<JSONL>\"}; not '" +
                                 it.key() + "'"));
      }
    }
    auto reports = admin.Evaluate(id, version, std::move(sets));
    if (!reports.ok()) return fail(reports.status());
    json out = {{"model", id}, {"passed", true}, {"reports", json::array()}};
    for (const auto& r : *reports) {
      out["version"] = r.version;
      out["passed"] = out["passed"].get<bool>() && r.passed;
      out["reports"].push_back(json::parse(r.ToJson()));
    }
    return http::JsonResponse(200, out.dump());
  }
  if (route == "versions") {
    if (req.method != "GET") return fail(InvalidInput(req.method + " " + req.path + ": use GET"));
    VersionHead head;
    auto versions = admin.Versions(id, &head);
    if (!versions.ok()) return fail(versions.status());
    json out = HeadJson(head);
    out["object"] = "list";
    out["id"] = id;
    out["data"] = json::array();
    for (const auto& v : *versions) out["data"].push_back(VersionJson(v));
    return http::JsonResponse(200, out.dump());
  }
  if (route.starts_with("versions/")) {
    if (req.method != "GET") return fail(InvalidInput(req.method + " " + req.path + ": use GET"));
    auto ref = SplitVersionRef(id + "@" + std::string(route.substr(9)));
    if (!ref.ok()) return fail(ref.status());
    auto v = admin.Version(id, ref->version);
    return v.ok() ? http::JsonResponse(200, VersionJson(*v).dump()) : fail(v.status());
  }
  if (req.method != "POST") return fail(InvalidInput(req.method + " " + req.path + ": use POST"));
  auto o = ParseObject(req.body.empty() ? "{}" : req.body);
  if (!o.ok()) return fail(o.status());
  if (route == "quantize") return ServeQuantize(*o, id, admin, fail, who);
  Result<admin::VersionView> now = InvalidInput("unreachable");
  if (route == "promote") {
    auto version = o->find("version");
    if (o->size() != 1 || version == o->end() || !version->is_number_unsigned() ||
        version->get<uint64_t>() == 0 || version->get<uint64_t>() > UINT32_MAX) {
      return fail(
          InvalidInput("promote takes {\"version\": n}, n a version of the model (1, 2, ...)"));
    }
    now = admin.Promote(id, static_cast<uint32_t>(version->get<uint64_t>()), who);
  } else {
    if (!o->empty()) return fail(InvalidInput("rollback takes no fields"));
    now = admin.Rollback(id, who);
  }
  if (!now.ok()) return fail(now.status());
  spdlog::info("admin: {} {}: version {} serves", id,
               route == "promote" ? "promoted" : "rolled back", now->version.version);
  AwaitServing(id, now->version.version);
  return http::JsonResponse(200, VersionJson(*now).dump());
}

http::Response AdminApi::ServeQuantize(const json& o, const std::string& id, admin::CatalogAdmin& admin,
                                       const std::function<http::Response(const Status&)>& fail,
                                       const std::string& who) {
  const char* usage =
      "quantize takes {\"precision\": \"int8\" | \"bf16\", \"of\"?: n, \"license\"?: \"...\", \"bounds\"?: {...}}";
  std::string precision;
  uint32_t of = 0;
  admin::VariantBounds bounds;
  admin::RegisterOptions options{.limits = options_.stream_limits,
                                 .owner = who,
                                 .license = {},
                                 .require_license = options_.require_license,
                                 .candidate = true};
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (it.key() == "precision" && it->is_string()) {
      precision = it->get<std::string>();
    } else if (it.key() == "of" && it->is_number_unsigned() && it->get<uint64_t>() > 0 &&
               it->get<uint64_t>() <= UINT32_MAX) {
      of = it->get<uint32_t>();
    } else if (it.key() == "license" && it->is_string()) {
      options.license = it->get<std::string>();
    } else if (it.key() == "bounds") {
      auto tightened = admin::VariantBounds::Tightened(it->dump());
      if (!tightened.ok()) return fail(tightened.status());
      bounds = *tightened;
    } else {
      return fail(InvalidInput(std::string(usage) + "; not '" + it.key() + "'"));
    }
  }
  if (precision.empty()) return fail(InvalidInput(usage));
  std::unique_ptr<store::CacheLease> files;  // a model from the store: held while it is checked
  admin.SetFetch([&](const std::string& digest) { return FetchToCheck(digest, &files); });
  auto variant = admin.Quantize(id, of, precision, options, bounds);
  if (!variant.ok()) return fail(variant.status());
  const json out = VersionJson(*variant);
  spdlog::info("admin: {} version {} is a {} variant, {}", id, variant->version.version, precision,
               out["record"]["variant"].value("passed", false) ? "within its bound" : "outside its bound");
  return http::JsonResponse(200, out.dump());
}

http::Response AdminApi::ServeCanary(const http::Request& req, const std::string& id,
                                     admin::CatalogAdmin& admin,
                                     const std::function<http::Response(const Status&)>& fail,
                                     const std::string& who) {
  if (req.method == "GET") {
    VersionHead head;
    auto versions = admin.Versions(id, &head);
    if (!versions.ok()) return fail(versions.status());
    json out = {{"model", id}, {"canary", nullptr}};
    if (head.canary.active()) out["canary"] = json::parse(head.canary.ToJson());
    if (options_.canaries) out["gateway"] = json::parse(options_.canaries->Stats(id).ToJson());
    return http::JsonResponse(200, out.dump());
  }
  if (req.method == "DELETE") {
    auto head = admin.StopCanary(id, who, "stopped");
    if (!head.ok()) return fail(head.status());
    return http::JsonResponse(200, json{{"model", id}, {"canary", nullptr}}.dump());
  }
  if (req.method != "POST")
    return fail(InvalidInput(req.method + " " + req.path + ": use GET, POST or DELETE"));
  auto parsed = CanarySpec::Parse(req.body);
  if (!parsed.ok()) return fail(parsed.status());
  const CanarySpec& canary = *parsed;
  if (canary.version == 0)
    return fail(InvalidInput("canary: version: the version to send a share of requests to"));
  auto head = admin.StartCanary(id, canary, who);
  if (!head.ok()) return fail(head.status());
  spdlog::info("admin: {}: {} canary on version {} for {:.1f} % of its requests", id,
               canary.shadow() ? "shadow" : "split", canary.version, 100 * canary.fraction);
  AwaitCanary(id, canary.version);
  return http::JsonResponse(
      200, json{{"model", id}, {"canary", json::parse(head->canary.ToJson())}}.dump());
}

void AdminApi::EndCanary(const std::string& model, uint32_t version, const std::string& why) {
  canary_ends_.Post([this, model, version, why] {
    admin::CatalogAdmin admin(models_, versions_, js_);
    VersionHead head;
    if (auto v = admin.Versions(model, &head); !v.ok() || head.canary.version != version) return;
    auto ended = admin.StopCanary(model, "gateway:" + options_.gateway_id, why);
    if (ended.ok()) {
      spdlog::warn("admin: {}: canary on version {} ended: {}", model, version, why);
    } else {
      spdlog::error("admin: {}: ending the canary on version {} failed: {}", model, version,
                    ended.status().ToString());
    }
  });
}

void AdminApi::AwaitServing(const std::string& id, uint32_t version) const {
  AwaitCatalog([&](const queue::CatalogSnapshot& c) {
    auto it = c.find(id);
    return it != c.end() && it->second->version == version;
  });
}

void AdminApi::AwaitCanary(const std::string& id, uint32_t version) const {
  AwaitCatalog([&](const queue::CatalogSnapshot& c) {
    auto it = c.find(id);
    return it != c.end() && it->second->canary.version == version &&
           c.count(VersionedName(id, version));
  });
}

}  // namespace shoal::gateway
