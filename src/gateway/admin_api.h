// AdminApi: the gateway's admin routes — the self-service catalog.
//
//   GET    /v1/admin/models        every registered model, as stored
//   POST   /v1/admin/models        register (or re-register) a model:
//            {"path": "<dir or profile>", "id"?: "...", "pinned"?: bool}
//            a model directory in the Hugging Face layout (its shoal.yaml,
//            if any, is the profile) or a profile file; or
//            {"spec": {<a profile, as JSON>}}
//          → 201 with the stored spec (memory_bytes measured), 400 with the
//            runtime's reason when the model is broken
//   GET    /v1/admin/models/{id}   one model (404 MODEL_NOT_FOUND)
//   PATCH  /v1/admin/models/{id}   {"pinned": bool}
//   DELETE /v1/admin/models/{id}   remove it; workers stop serving it
//   GET    /v1/cluster             workers, memory, resident / loading /
//                                  failed models, backlog (cluster_view.h)
//
// Who may call them: with an admin token configured (`shoal gateway
// --admin-token`, or SHOAL_ADMIN_TOKEN), a request must carry
// `Authorization: Bearer <token>` (401 UNAUTHENTICATED without one, 403
// FORBIDDEN with another); without one, only clients on this machine
// (loopback) may (403 otherwise), which is what `shoal up` needs and nothing
// more.
//
// Registration loads the model once to check it (catalog_admin.h) — up to
// seconds — so admin requests run on a thread of their own, one at a time,
// never on a lane's loop.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/event_loop.h"
#include "gateway/http.h"
#include "queue/catalog.h"
#include "queue/nats.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

struct AdminOptions {
  std::string token;  // empty: loopback clients only
  queue::StreamLimits stream_limits;
};

class AdminApi {
 public:
  using CatalogFn = std::function<std::shared_ptr<const queue::CatalogSnapshot>()>;
  // Not owned; they outlive this.
  AdminApi(AdminOptions options, kvStore* models, jsCtx* js, CatalogFn catalog, queue::WorkerRegistry* workers);
  ~AdminApi();

  static bool Handles(std::string_view path);
  // From any thread; `respond` is called from the admin thread.
  void Handle(HttpRequest&& req, Responder respond);

 private:
  Status Authorize(const HttpRequest& req) const;
  HttpResponse Serve(const HttpRequest& req);  // on the admin thread

  const AdminOptions options_;
  kvStore* const models_;
  jsCtx* const js_;
  const CatalogFn catalog_;
  queue::WorkerRegistry* const workers_;
  EventLoop loop_;
};

}  // namespace shoal::gateway
