// AdminApi: the gateway's admin routes — the self-service catalog.
//
//   GET    /v1/admin/models        every registered model, as stored
//   POST   /v1/admin/models        register (or re-register) a model:
//            {"path": "<dir or profile>", "id"?: "...", "pinned"?: bool}
//            a model directory in the Hugging Face layout (its shoal.yaml,
//            if any, is the profile) or a profile file; or
//            {"artifact": "sha256:<hex>", "id": "...", "pinned"?: bool}
//            a model pushed to the model store (store/model_store.h),
//            fetched into this gateway's model cache to be checked; or
//            {"spec": {<a profile, as JSON>}}
//            and with any of them "license": "<id>" (where the model's
//            files state none) and "candidate": true (a new version that
//            waits for a promotion; default: it serves at once)
//          → 201 (a new id) or 200 with the version: its spec (memory_bytes
//            measured, "version"), "state" and "record" (its promotion
//            record, catalog/model_version.h); 400 with the runtime's reason
//            when the model is broken, or for the license policy
//   GET    /v1/admin/models/{id}   one model's serving spec (404
//                                  MODEL_NOT_FOUND); {id}@{n}: version n
//   GET    /v1/admin/models/{id}/versions   its versions and head:
//            {"serving", "rollback_target", "candidates", "log", "data"}
//   GET    /v1/admin/models/{id}/versions/{n}   one version, with its record
//   POST   /v1/admin/models/{id}/promote   {"version": n}: n serves
//   POST   /v1/admin/models/{id}/rollback  the version before serves again
//          (400 when there is none); both answer with the version now
//          serving, once this gateway's catalog shows it. A promotion (and
//          a registration) of an id with evaluations attached runs them
//          first, through this gateway's router: 400 naming the measures
//          under their thresholds, the version left a candidate
//   POST   /v1/admin/models/{id}/canary   {"version": n, "fraction": 0.1,
//            "mode"?: "split" | "shadow", "max_error_rate"?: 0.05,
//            "min_requests"?: 20, "min_cosine"?, "min_agreement"?}
//            (catalog/model_spec.h CanarySpec): that share of the id's
//            requests goes to version n, or (shadow) is copied to it and
//            the answers compared; a gateway that sees it fail more often,
//            or agree less, than that ends it
//   GET    /v1/admin/models/{id}/canary   {"canary": {...} | null,
//            "gateway": this gateway's counts per side and comparisons}
//   DELETE /v1/admin/models/{id}/canary   end it (promote and rollback do)
//   POST   /v1/admin/models/{id}/evaluations   attach a set: the body is its
//            JSONL (admin/evaluation.h) → 201 {"evaluation", "task",
//            "examples", "thresholds", "source"}
//   GET    /v1/admin/models/{id}/evaluations   the sets attached
//   DELETE /v1/admin/models/{id}/evaluations/{name}
//   POST   /v1/admin/models/{id}/evaluate   {"version"?: n (default: the
//            serving one), "set"?: "<JSONL>" (default: the attached sets)}
//          → {"version", "passed", "reports": [...]}, the reports kept in
//            the version's record
//   PATCH  /v1/admin/models/{id}   {"pinned": bool}
//   DELETE /v1/admin/models/{id}   remove it; workers stop serving it
//   POST   /v1/admin/models/{id}/loras   register a LoRA adapter on model
//            {id}: {"name": "[A-Za-z0-9._-]{1,64}", "path": "<PEFT dir>"},
//            or "artifact": "sha256:<hex>" for one in the model store
//          → 201 {"model", "name", "path", "memory_bytes"}; 404 without the
//            model, 400 for a bad or taken name or the runtime's reason
//            to refuse the adapter (catalog_admin.h)
//   GET    /v1/admin/models/{id}/loras   its adapters
//   DELETE /v1/admin/models/{id}/loras/{name}   remove one (404 if absent)
//          Both answer once this gateway's catalog has the change, so the
//          next request here may use the adapter (or gets 404). Model ids
//          may hold '/': a path ending in /loras or /loras/{name} is an
//          adapter route unless (GET, DELETE) it is a model's id whole.
//   GET    /v1/cluster             workers, memory, resident / loading /
//                                  failed models, backlog (cluster_view.h)
//
//   GET    /v1/admin/keys          API keys (queue/keys.h): names, scopes,
//                                  limits — never secrets or their hashes
//   POST   /v1/admin/keys          {"name", "models"?: [...] (default ["*"]),
//            "admin"?: bool, "rps"?: n, "tokens_per_min"?: n}
//          → 201 with the key and its "secret", the only time it is shown
//   DELETE /v1/admin/keys/{name}   revoke it (every gateway, at once)
//
// The model store's upload routes (/v1/admin/artifacts) are ArtifactsApi's
// (artifacts_api.h). Who may call them is decided before Handle (gateway/auth.h,
// Authenticator::AuthorizeAdmin): the admin token, an admin-scoped key, or,
// with neither configured, local clients.
//
// Registration loads the model once to check it (catalog_admin.h) — up to
// seconds — so admin requests run on a thread of their own, one at a time,
// never on a lane's loop.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "admin/catalog_admin.h"
#include "admin/evaluation.h"
#include "common/event_loop.h"
#include "gateway/canary_monitor.h"
#include "http/http.h"
#include "queue/batch_store.h"
#include "queue/catalog_watch.h"
#include "queue/nats.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"
#include "store/model_cache.h"

namespace shoal::gateway {

struct AdminOptions {
  queue::StreamLimits stream_limits;
  // Refuse a registration whose model states no license, nor its
  // registrant (admin/provenance.h).
  bool require_license = false;
  // The batch jobs /v1/cluster shows; unset: none.
  std::function<std::vector<queue::BatchRecord>()> batch_jobs;
  // Where models registered by artifact are fetched to be checked (not
  // owned); null: such registrations are refused.
  store::ModelCache* model_cache = nullptr;
  // What this gateway sees of canaries (not owned; null: no counts), and
  // its id, which a canary it ends is logged by.
  CanaryMonitor* canaries = nullptr;
  std::string gateway_id;
  // The serving path evaluations run through (the gateway's own router).
  admin::ServeFn serve;
};

class AdminApi {
 public:
  using CatalogFn = std::function<std::shared_ptr<const queue::CatalogSnapshot>()>;
  // Not owned; they outlive this.
  AdminApi(AdminOptions options, kvStore* models, kvStore* versions, kvStore* keys, jsCtx* js, CatalogFn catalog,
           queue::WorkerRegistry* workers);
  ~AdminApi();

  static bool Handles(std::string_view path);
  // From any thread, for an authorized request (`who`: the caller's name,
  // gateway/auth.h); `respond` is called from the admin thread.
  void Handle(http::Request&& req, http::Responder respond, std::string who = "local");
  // Ends the canary of `model` if it is still on `version` (CanaryMonitor's
  // decision), on canary_ends_'s thread.
  void EndCanary(const std::string& model, uint32_t version, const std::string& why);

 private:
  http::Response Serve(const http::Request& req, const std::string& who);  // on the admin thread
  // /v1/admin/models/{id}/versions[/{n}], /promote, /rollback,
  // /evaluations[/{name}], /evaluate, /canary, /quantize (admin_versions.cc).
  http::Response ServeVersions(const http::Request& req, const std::string& id, std::string_view route,
                               const std::string& request_id, const std::string& who);
  http::Response ServeCanary(const http::Request& req, const std::string& id, admin::CatalogAdmin& admin,
                             const std::function<http::Response(const Status&)>& fail, const std::string& who);
  http::Response ServeQuantize(const nlohmann::json& body, const std::string& id, admin::CatalogAdmin& admin,
                               const std::function<http::Response(const Status&)>& fail, const std::string& who);
  // A model from the store, fetched into this gateway's model cache to be
  // checked: its directory, the files held by `*files` until it is reset.
  Result<std::string> FetchToCheck(const std::string& digest,
                                   std::unique_ptr<store::CacheLease>* files) const;
  // Waits (a little) until this gateway's catalog serves version `version`
  // of `id` (or routes its canary to it).
  void AwaitServing(const std::string& id, uint32_t version) const;
  void AwaitCanary(const std::string& id, uint32_t version) const;
  http::Response ServeKeys(const http::Request& req, std::string_view rest, const std::string& request_id);
  http::Response ServeLoras(const http::Request& req, const std::string& base, const std::string& name,
                          const std::string& request_id);
  // Waits (two seconds at most) until this gateway's catalog shows a
  // change the admin made: `shown` says whether the snapshot has it.
  void AwaitCatalog(const std::function<bool(const queue::CatalogSnapshot&)>& shown) const;

  const AdminOptions options_;
  kvStore* const models_;
  kvStore* const versions_;
  kvStore* const keys_;
  jsCtx* const js_;
  const CatalogFn catalog_;
  queue::WorkerRegistry* const workers_;
  EventLoop loop_;
  // Ends the canaries a CanaryMonitor trips, on a thread of its own: an
  // automatic rollback never waits behind a registration or an evaluation
  // on loop_ (the head's compare-and-set orders the two).
  EventLoop canary_ends_;
};

}  // namespace shoal::gateway
