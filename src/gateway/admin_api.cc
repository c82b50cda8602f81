#include "gateway/admin_api.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "admin/catalog_admin.h"
#include "admin/cluster_view.h"
#include "admin/model_directory.h"
#include "gateway/admin_bodies.h"
#include "common/ids.h"
#include "common/log.h"
#include "queue/keys.h"
#include "store/model_cache.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

constexpr std::string_view kModels = "/v1/admin/models";
constexpr std::string_view kCluster = "/v1/cluster";
constexpr std::string_view kKeys = "/v1/admin/keys";

http::Response SpecResponse(int status, const ModelSpec& spec) {
  return http::JsonResponse(status, spec.ToJson());
}

// The local directory of a model in the model store (fetched and checked).
using FetchArtifact = std::function<Result<std::string>(const std::string& digest)>;

// The local directory of `digest` (a JSON field's value), fetched to be
// checked: a digest the store lacks is the caller's mistake, not a missing
// route.
Result<std::string> ArtifactDirectory(const FetchArtifact& fetch, const std::string& digest) {
  SHOAL_RETURN_IF_ERROR(ValidateArtifactDigest(digest));
  auto dir = fetch(digest);
  if (dir.ok()) return dir;
  const Code code = dir.status().code() == Code::kNotFound ? Code::kInvalidInput : dir.status().code();
  return Status(code, "artifact: " + dir.status().message());
}

// POST /v1/admin/models: what registration says besides the spec
// ("license", "candidate"), taken out of the body.
Status TakeRegisterOptions(json& o, admin::RegisterOptions* options) {
  if (auto it = o.find("license"); it != o.end()) {
    if (!it->is_string()) return InvalidInput("license: expected a string (an SPDX id, or the model card's name)");
    options->license = it->get<std::string>();
    o.erase(it);
  }
  if (auto it = o.find("candidate"); it != o.end()) {
    if (!it->is_boolean()) return InvalidInput("candidate: expected true or false");
    options->candidate = it->get<bool>();
    o.erase(it);
  }
  return Status::Ok();
}

// POST /v1/admin/models: the spec to register.
Result<ModelSpec> SpecFromBody(const std::string& body, const FetchArtifact& fetch,
                               admin::RegisterOptions* options) {
  auto o = ParseObject(body);
  if (!o.ok()) return o.status();
  SHOAL_RETURN_IF_ERROR(TakeRegisterOptions(*o, options));
  for (auto it = o->begin(); it != o->end(); ++it) {
    if (it.key() != "path" && it.key() != "artifact" && it.key() != "id" && it.key() != "pinned" &&
        it.key() != "spec") {
      return InvalidInput("unknown field '" + it.key() +
                          "' (expected path, artifact, id, pinned, spec, license, or candidate)");
    }
  }
  if (o->contains("spec") + o->contains("path") + o->contains("artifact") != 1) {
    return InvalidInput("give one of 'path', 'artifact' or 'spec'");
  }
  if (o->contains("spec")) {
    if (o->size() != 1) return InvalidInput("'spec' is the whole profile: give only license and candidate beside it");
    return ModelSpec::Parse((*o)["spec"].dump());
  }
  std::string id;
  if (auto it = o->find("id"); it != o->end()) {
    if (!it->is_string()) return InvalidInput("id: expected a string");
    id = it->get<std::string>();
  }
  Result<ModelSpec> spec = InvalidInput("unreachable");
  if (auto artifact = o->find("artifact"); artifact != o->end()) {
    if (!artifact->is_string()) return InvalidInput("artifact: expected \"sha256:<hex>\"");
    const std::string digest = artifact->get<std::string>();
    if (id.empty()) return InvalidInput("id: a model from the model store needs one");
    SHOAL_ASSIGN_OR_RETURN(const std::string dir, ArtifactDirectory(fetch, digest));
    spec = admin::SpecFromDirectory(dir, id);
    if (spec.ok()) spec->artifact = digest;
  } else {
    const json& path = (*o)["path"];
    if (!path.is_string() || path.get<std::string>().empty())
      return InvalidInput("path: expected a string");
    spec = admin::SpecFromPath(path.get<std::string>(), id);
  }
  if (!spec.ok()) return spec.status();
  if (auto it = o->find("pinned"); it != o->end()) {
    if (!it->is_boolean()) return InvalidInput("pinned: expected true or false");
    spec->pinned = it->get<bool>();
  }
  return spec;
}

// "{base}/loras" or "{base}/loras/{name}" (the path after /v1/admin/models/).
struct LoraPath {
  std::string base, name;
};
std::optional<LoraPath> MatchLoraPath(std::string_view rest) {
  constexpr std::string_view kLoras = "/loras";
  if (rest.ends_with(kLoras) && rest.size() > kLoras.size()) {
    return LoraPath{std::string(rest.substr(0, rest.size() - kLoras.size())), {}};
  }
  const size_t at = rest.rfind("/loras/");
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  const std::string_view name = rest.substr(at + kLoras.size() + 1);
  if (name.empty() || name.find('/') != std::string_view::npos) return std::nullopt;
  return LoraPath{std::string(rest.substr(0, at)), std::string(name)};
}

// POST /v1/admin/models/{base}/loras: the adapter to register, from a
// path or from the model store (`fetch` makes it local to be checked).
Result<LoraSpec> LoraFromBody(const std::string& body, const FetchArtifact& fetch) {
  auto o = ParseObject(body);
  if (!o.ok()) return o.status();
  for (auto it = o->begin(); it != o->end(); ++it) {
    if (it.key() != "name" && it.key() != "path" && it.key() != "artifact") {
      return InvalidInput("unknown field '" + it.key() + "' (expected name, and path or artifact)");
    }
  }
  LoraSpec lora;
  auto name = o->find("name");
  if (name == o->end() || !name->is_string()) return InvalidInput("name: expected a string");
  lora.name = name->get<std::string>();
  if (o->contains("path") == o->contains("artifact")) return InvalidInput("give one of 'path' or 'artifact'");
  if (auto artifact = o->find("artifact"); artifact != o->end()) {
    if (!artifact->is_string()) return InvalidInput("artifact: expected \"sha256:<hex>\"");
    lora.artifact = artifact->get<std::string>();
    SHOAL_ASSIGN_OR_RETURN(lora.path, ArtifactDirectory(fetch, lora.artifact));
    return lora;
  }
  auto path = o->find("path");
  if (!path->is_string() || path->get<std::string>().empty()) {
    return InvalidInput("path: expected the adapter's directory");
  }
  lora.path = path->get<std::string>();
  return lora;
}

// "{id}/{route}" (the path after /v1/admin/models/) for the version routes:
// {id} and "versions", "versions/{n}", "promote" or "rollback".
struct VersionPath {
  std::string id, route;
};
std::optional<VersionPath> MatchVersionPath(std::string_view rest) {
  for (std::string_view suffix :
       {"/versions", "/promote", "/rollback", "/evaluations", "/evaluate", "/canary", "/quantize"}) {
    if (rest.ends_with(suffix) && rest.size() > suffix.size()) {
      return VersionPath{std::string(rest.substr(0, rest.size() - suffix.size())), std::string(suffix.substr(1))};
    }
  }
  for (std::string_view part : {"/versions/", "/evaluations/"}) {
    const size_t at = rest.rfind(part);
    if (at != std::string_view::npos && at > 0 && at + part.size() < rest.size()) {
      return VersionPath{std::string(rest.substr(0, at)), std::string(rest.substr(at + 1))};
    }
  }
  return std::nullopt;
}

bool HasLora(const queue::CatalogSnapshot& catalog, const std::string& base, const std::string& name) {
  auto it = catalog.find(base);
  return it != catalog.end() && it->second->FindLora(name);
}

json LoraJson(std::string_view base, const LoraSpec& l) {
  json o{{"model", base}, {"name", l.name}, {"path", l.path}, {"memory_bytes", l.memory_bytes}};
  if (!l.artifact.empty()) o["artifact"] = l.artifact;
  return o;
}

// What the admin API shows of a key: never its secret, nor its hash.
json KeyInfo(const queue::ApiKey& k) {
  return json{{"name", k.name},
              {"models", k.models},
              {"admin", k.admin},
              {"rps", k.rps},
              {"tokens_per_min", k.tokens_per_min},
              {"priority", queue::PriorityName(k.priority)},
              {"created_unix_ms", k.created_unix_ms}};
}

Result<uint32_t> LimitField(const json& o, const char* field) {
  auto it = o.find(field);
  if (it == o.end()) return 0u;
  if (!it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX) {
    return InvalidInput(std::string(field) +
                        ": expected a whole number from 0 (unlimited) to 2^32-1");
  }
  return static_cast<uint32_t>(it->get<uint64_t>());
}

// POST /v1/admin/keys: the key to make (IssueKey checks the name and models).
Result<queue::ApiKey> KeyFromBody(const std::string& body) {
  auto o = ParseObject(body);
  if (!o.ok()) return o.status();
  for (auto it = o->begin(); it != o->end(); ++it) {
    static constexpr std::string_view kFields[] = {"name", "models",         "admin",
                                                   "rps",  "tokens_per_min", "priority"};
    if (std::find(std::begin(kFields), std::end(kFields), it.key()) == std::end(kFields)) {
      return InvalidInput("unknown field '" + it.key() +
                          "' (expected name, models, admin, rps, tokens_per_min, priority)");
    }
  }
  queue::ApiKey key;
  auto name = o->find("name");
  if (name == o->end() || !name->is_string()) return InvalidInput("name: expected a string");
  key.name = name->get<std::string>();
  key.models = {"*"};
  if (auto models = o->find("models"); models != o->end()) {
    if (!models->is_array())
      return InvalidInput("models: expected an array of model ids, or [\"*\"]");
    key.models.clear();
    for (const auto& m : *models) {
      if (!m.is_string()) return InvalidInput("models: expected an array of model ids, or [\"*\"]");
      key.models.push_back(m.get<std::string>());
    }
  }
  if (auto admin = o->find("admin"); admin != o->end()) {
    if (!admin->is_boolean()) return InvalidInput("admin: expected true or false");
    key.admin = admin->get<bool>();
  }
  auto rps = LimitField(*o, "rps");
  if (!rps.ok()) return rps.status();
  key.rps = *rps;
  auto tokens = LimitField(*o, "tokens_per_min");
  if (!tokens.ok()) return tokens.status();
  key.tokens_per_min = *tokens;
  if (auto priority = o->find("priority"); priority != o->end()) {
    const std::optional<queue::Priority> p =
        priority->is_string() ? queue::ParsePriority(priority->get<std::string>()) : std::nullopt;
    if (!p) return InvalidInput("priority: expected \"interactive\" or \"batch\"");
    key.priority = *p;
  }
  return key;
}

}  // namespace

AdminApi::AdminApi(AdminOptions options, kvStore* models, kvStore* versions, kvStore* keys, jsCtx* js,
                   CatalogFn catalog, queue::WorkerRegistry* workers)
    : options_(std::move(options)),
      models_(models),
      versions_(versions),
      keys_(keys),
      js_(js),
      catalog_(std::move(catalog)),
      workers_(workers) {
  loop_.Start();
  canary_ends_.Start();
}

AdminApi::~AdminApi() {
  canary_ends_.Stop();
  loop_.Stop();
}

bool AdminApi::Handles(std::string_view path) {
  return path.starts_with("/v1/admin/") || path == kCluster;
}

void AdminApi::Handle(http::Request&& req, http::Responder respond, std::string who) {
  loop_.Post([this, req = std::move(req), respond = std::move(respond), who = std::move(who)] {
    respond(Serve(req, who));
  });
}

http::Response AdminApi::Serve(const http::Request& req, const std::string& who) {
  const std::string request_id = "admin-" + RandomToken(8);
  auto fail = [&](const Status& s) { return http::ErrorResponse(s, request_id); };

  if (req.path == kCluster) {
    if (req.method != "GET") return fail(InvalidInput("GET /v1/cluster"));
    const auto jobs =
        options_.batch_jobs ? options_.batch_jobs() : std::vector<queue::BatchRecord>();
    return http::JsonResponse(200,
                              admin::ClusterView(*catalog_(), workers_->Live(), js_, jobs).dump());
  }
  if (std::string_view(req.path).starts_with(kKeys)) {
    return ServeKeys(req, std::string_view(req.path).substr(kKeys.size()), request_id);
  }
  admin::CatalogAdmin admin(models_, versions_, js_);
  admin.SetServe(options_.serve);
  std::string_view path = req.path;
  if (!path.starts_with(kModels))
    return fail(Status(Code::kNotFound, "no admin route " + req.path));
  path.remove_prefix(kModels.size());

  if (path.empty() || path == "/") {
    if (req.method == "GET") {
      auto specs = admin.List();
      if (!specs.ok()) return fail(specs.status());
      json data = json::array();
      for (const auto& s : *specs) data.push_back(json::parse(s.ToJson()));
      return http::JsonResponse(200, json{{"object", "list"}, {"data", data}}.dump());
    }
    if (req.method == "POST") {
      std::unique_ptr<store::CacheLease>
          files;  // a model from the store: its files, held while it is checked
      admin::RegisterOptions register_options{.limits = options_.stream_limits,
                                              .owner = who,
                                              .license = {},
                                              .require_license = options_.require_license,
                                              .candidate = false};
      auto spec = SpecFromBody(
          req.body,
          [&](const std::string& digest) { return FetchToCheck(digest, &files); },
          &register_options);
      if (!spec.ok()) return fail(spec.status());
      const bool existed = admin.Get(spec->id).ok();
      spdlog::info("admin: registering {} from {}", spec->id,
                   spec->path.empty() ? spec->runtime : spec->path);
      auto stored = admin.Register(std::move(spec).value(), register_options);
      if (!stored.ok()) return fail(stored.status());
      const ModelSpec& v = stored->version.spec;
      spdlog::info("admin: {} version {} registered ({:.1f} MB{}): {}", v.id, v.version, v.memory_bytes / 1e6,
                   v.pinned ? ", pinned" : "", VersionStateName(stored->state));
      if (stored->state == VersionState::kServing) AwaitServing(v.id, v.version);
      return http::JsonResponse(existed ? 200 : 201, VersionJson(*stored).dump());
    }
    return fail(InvalidInput(req.method + " " + req.path + ": use GET or POST"));
  }

  if (path.front() != '/') return fail(Status(Code::kNotFound, "no admin route " + req.path));
  const std::string id(path.substr(1));
  if (auto version = MatchVersionPath(id); version && (req.method == "POST" || !catalog_()->count(id))) {
    return ServeVersions(req, version->id, version->route, request_id, who);
  }
  if (auto lora = MatchLoraPath(id)) {
    const auto snapshot = catalog_();
    if (req.method == "POST" || !snapshot->count(id))
      return ServeLoras(req, lora->base, lora->name, request_id);
  }
  if (req.method == "GET" && id.find('@') != std::string::npos) {  // id@n: one version
    auto ref = SplitVersionRef(id);
    if (!ref.ok()) return fail(ref.status());
    auto v = admin.Version(ref->id, ref->version);
    return v.ok() ? http::JsonResponse(200, VersionJson(*v).dump()) : fail(v.status());
  }
  if (req.method == "GET") {
    auto spec = admin.Get(id);
    return spec.ok() ? SpecResponse(200, *spec) : fail(spec.status());
  }
  if (req.method == "DELETE") {
    if (Status s = admin.Remove(id); !s.ok()) return fail(s);
    spdlog::info("admin: {} removed", id);
    return http::JsonResponse(200, json{{"id", id}, {"deleted", true}}.dump());
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

http::Response AdminApi::ServeLoras(const http::Request& req, const std::string& base,
                                    const std::string& name, const std::string& request_id) {
  auto fail = [&](const Status& s) { return http::ErrorResponse(s, request_id); };
  admin::CatalogAdmin admin(models_, versions_, js_);
  if (name.empty()) {
    if (req.method == "GET") {
      auto spec = admin.Get(base);
      if (!spec.ok()) return fail(spec.status());
      json data = json::array();
      for (const auto& l : spec->loras) data.push_back(LoraJson(base, l));
      return http::JsonResponse(200, json{{"object", "list"}, {"data", data}}.dump());
    }
    if (req.method != "POST")
      return fail(InvalidInput(req.method + " " + req.path + ": use GET or POST"));
    std::unique_ptr<store::CacheLease> files;  // an adapter from the store, held while it is checked
    auto lora = LoraFromBody(req.body, [&](const std::string& digest) { return FetchToCheck(digest, &files); });
    if (!lora.ok()) return fail(lora.status());
    spdlog::info("admin: adding LoRA {} to {} from {}", lora->name, base, lora->path);
    auto stored = admin.AddLora(base, std::move(lora).value());
    if (!stored.ok()) return fail(stored.status());
    AwaitCatalog([&](const queue::CatalogSnapshot& c) { return HasLora(c, base, stored->name); });
    spdlog::info("admin: LoRA {}:{} registered ({:.1f} MB)", base, stored->name,
                 stored->memory_bytes / 1e6);
    return http::JsonResponse(201, LoraJson(base, *stored).dump());
  }
  if (req.method != "DELETE")
    return fail(InvalidInput(req.method + " " + req.path + ": use DELETE"));
  if (Status s = admin.RemoveLora(base, name); !s.ok()) return fail(s);
  AwaitCatalog([&](const queue::CatalogSnapshot& c) { return !HasLora(c, base, name); });
  spdlog::info("admin: LoRA {}:{} removed", base, name);
  return http::JsonResponse(200, json{{"model", base}, {"name", name}, {"deleted", true}}.dump());
}

Result<std::string> AdminApi::FetchToCheck(const std::string& digest,
                                           std::unique_ptr<store::CacheLease>* files) const {
  if (!options_.model_cache) return InvalidInput("this gateway has no model cache");
  spdlog::info("admin: fetching {} to check it", digest);
  SHOAL_ASSIGN_OR_RETURN(*files, options_.model_cache->Acquire(digest));
  return (*files)->path();
}

void AdminApi::AwaitCatalog(const std::function<bool(const queue::CatalogSnapshot&)>& shown) const {
  // The KV watch brings the change in milliseconds; two seconds is plenty,
  // and the change is stored whether or not this view has it yet.
  const auto give_up = SteadyClock::now() + std::chrono::seconds(2);
  while (!shown(*catalog_()) && SteadyClock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

http::Response AdminApi::ServeKeys(const http::Request& req, std::string_view rest,
                                   const std::string& request_id) {
  auto fail = [&](const Status& s) { return http::ErrorResponse(s, request_id); };
  if (rest.empty() || rest == "/") {
    if (req.method == "GET") {
      auto keys = queue::ListKeys(keys_);
      if (!keys.ok()) return fail(keys.status());
      json data = json::array();
      for (const auto& k : *keys) data.push_back(KeyInfo(k));
      return http::JsonResponse(200, json{{"object", "list"}, {"data", data}}.dump());
    }
    if (req.method == "POST") {
      auto key = KeyFromBody(req.body);
      if (!key.ok()) return fail(key.status());
      auto issued = queue::IssueKey(keys_, std::move(key).value());
      if (!issued.ok()) return fail(issued.status());
      spdlog::info("admin: key {} created", issued->key.name);
      json out = KeyInfo(issued->key);
      out["secret"] = issued->secret;
      return http::JsonResponse(201, out.dump());
    }
    return fail(InvalidInput(req.method + " " + req.path + ": use GET or POST"));
  }
  if (rest.front() != '/') return fail(Status(Code::kNotFound, "no admin route " + req.path));
  const std::string name(rest.substr(1));
  if (req.method != "DELETE")
    return fail(InvalidInput(req.method + " " + req.path + ": use DELETE"));
  if (Status s = queue::RevokeKey(keys_, name); !s.ok()) return fail(s);
  spdlog::info("admin: key {} removed", name);
  return http::JsonResponse(200, json{{"name", name}, {"deleted", true}}.dump());
}

}  // namespace shoal::gateway
