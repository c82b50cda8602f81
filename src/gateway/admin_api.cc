#include "gateway/admin_api.h"

#include <nlohmann/json.hpp>

#include "catalog/catalog_admin.h"
#include "catalog/cluster_view.h"
#include "catalog/model_directory.h"
#include "common/ids.h"
#include "common/log.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

constexpr std::string_view kModels = "/v1/admin/models";
constexpr std::string_view kCluster = "/v1/cluster";

HttpResponse SpecResponse(int status, const ModelSpec& spec) { return JsonResponse(status, spec.ToJson()); }

// Constant time in the guess's length: the comparison must not say how much
// of a guess was right.
bool SameToken(std::string_view guess, std::string_view token) {
  size_t diff = guess.size() ^ token.size();
  for (size_t i = 0; i < guess.size(); ++i) {
    diff |= static_cast<unsigned char>(guess[i]) ^ static_cast<unsigned char>(i < token.size() ? token[i] : 0);
  }
  return diff == 0;
}

Result<json> ParseObject(const std::string& body) {
  json o = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return InvalidInput("the body must be a JSON object");
  return o;
}

// POST /v1/admin/models: the spec to register.
Result<ModelSpec> SpecFromBody(const std::string& body) {
  auto o = ParseObject(body);
  if (!o.ok()) return o.status();
  for (auto it = o->begin(); it != o->end(); ++it) {
    if (it.key() != "path" && it.key() != "id" && it.key() != "pinned" && it.key() != "spec") {
      return InvalidInput("unknown field '" + it.key() + "' (expected path, id, pinned, or spec)");
    }
  }
  if (o->contains("spec") == o->contains("path")) return InvalidInput("give either 'path' or 'spec'");
  if (o->contains("spec")) {
    if (o->size() != 1) return InvalidInput("'spec' is the whole profile: give nothing beside it");
    return ModelSpec::Parse((*o)["spec"].dump());
  }
  const json& path = (*o)["path"];
  if (!path.is_string() || path.get<std::string>().empty()) return InvalidInput("path: expected a string");
  std::string id;
  if (auto it = o->find("id"); it != o->end()) {
    if (!it->is_string()) return InvalidInput("id: expected a string");
    id = it->get<std::string>();
  }
  auto spec = catalog::SpecFromPath(path.get<std::string>(), id);
  if (!spec.ok()) return spec.status();
  if (auto it = o->find("pinned"); it != o->end()) {
    if (!it->is_boolean()) return InvalidInput("pinned: expected true or false");
    spec->pinned = it->get<bool>();
  }
  return spec;
}

}  // namespace

AdminApi::AdminApi(AdminOptions options, kvStore* models, jsCtx* js, CatalogFn catalog,
                   queue::WorkerRegistry* workers)
    : options_(std::move(options)), models_(models), js_(js), catalog_(std::move(catalog)), workers_(workers) {
  loop_.Start();
}

AdminApi::~AdminApi() { loop_.Stop(); }

bool AdminApi::Handles(std::string_view path) { return path.starts_with("/v1/admin/") || path == kCluster; }

void AdminApi::Handle(HttpRequest&& req, Responder respond) {
  loop_.Post([this, req = std::move(req), respond = std::move(respond)] { respond(Serve(req)); });
}

Status AdminApi::Authorize(const HttpRequest& req) const {
  if (options_.token.empty()) {
    if (req.from_loopback) return Status::Ok();
    return Status(Code::kForbidden,
                  "the admin API answers only local clients unless the gateway has an admin token "
                  "(--admin-token or SHOAL_ADMIN_TOKEN)");
  }
  constexpr std::string_view kBearer = "Bearer ";
  if (!req.authorization.starts_with(kBearer)) {
    return Status(Code::kUnauthenticated, "admin routes need 'Authorization: Bearer <admin token>'");
  }
  if (!SameToken(std::string_view(req.authorization).substr(kBearer.size()), options_.token)) {
    return Status(Code::kForbidden, "not the admin token");
  }
  return Status::Ok();
}

HttpResponse AdminApi::Serve(const HttpRequest& req) {
  const std::string request_id = "admin-" + RandomToken(8);
  auto fail = [&](const Status& s) { return ErrorResponse(s, request_id); };
  if (Status s = Authorize(req); !s.ok()) return fail(s);

  if (req.path == kCluster) {
    if (req.method != "GET") return fail(InvalidInput("GET /v1/cluster"));
    return JsonResponse(200, catalog::ClusterView(*catalog_(), workers_->Live(), js_).dump());
  }
  catalog::CatalogAdmin admin(models_, js_);
  std::string_view path = req.path;
  if (!path.starts_with(kModels)) return fail(Status(Code::kNotFound, "no admin route " + req.path));
  path.remove_prefix(kModels.size());

  if (path.empty() || path == "/") {
    if (req.method == "GET") {
      auto specs = admin.List();
      if (!specs.ok()) return fail(specs.status());
      json data = json::array();
      for (const auto& s : *specs) data.push_back(json::parse(s.ToJson()));
      return JsonResponse(200, json{{"object", "list"}, {"data", data}}.dump());
    }
    if (req.method == "POST") {
      auto spec = SpecFromBody(req.body);
      if (!spec.ok()) return fail(spec.status());
      const bool existed = admin.Get(spec->id).ok();
      spdlog::info("admin: registering {} from {}", spec->id, spec->path.empty() ? spec->runtime : spec->path);
      auto stored = admin.Register(std::move(spec).value(), options_.stream_limits);
      if (!stored.ok()) return fail(stored.status());
      spdlog::info("admin: {} registered ({:.1f} MB{})", stored->id, stored->memory_bytes / 1e6,
                   stored->pinned ? ", pinned" : "");
      return SpecResponse(existed ? 200 : 201, *stored);
    }
    return fail(InvalidInput(req.method + " " + req.path + ": use GET or POST"));
  }

  if (path.front() != '/') return fail(Status(Code::kNotFound, "no admin route " + req.path));
  const std::string id(path.substr(1));
  if (req.method == "GET") {
    auto spec = admin.Get(id);
    return spec.ok() ? SpecResponse(200, *spec) : fail(spec.status());
  }
  if (req.method == "DELETE") {
    if (Status s = admin.Remove(id); !s.ok()) return fail(s);
    spdlog::info("admin: {} removed", id);
    return JsonResponse(200, json{{"id", id}, {"deleted", true}}.dump());
  }
  if (req.method == "PATCH") {
    auto o = ParseObject(req.body);
    if (!o.ok()) return fail(o.status());
    auto pinned = o->find("pinned");
    if (o->size() != 1 || pinned == o->end() || !pinned->is_boolean()) {
      return fail(InvalidInput("PATCH takes {\"pinned\": true|false}"));
    }
    auto spec = admin.SetPinned(id, pinned->get<bool>());
    return spec.ok() ? SpecResponse(200, *spec) : fail(spec.status());
  }
  return fail(InvalidInput(req.method + " " + req.path + ": use GET, PATCH or DELETE"));
}

}  // namespace shoal::gateway
