// ArtifactsApi: the admin routes that put a model into the model store
// (store/artifact_uploads.h) an HTTP body at a time — for a client that
// reaches the gateway and not NATS (`shoal models push --gateway`,
// admin/gateway_push.h). Every piece is named by its SHA-256, checked
// before it is kept:
//
//   GET  /v1/admin/artifacts   {"max_body_bytes"}: the largest piece
//                              this gateway takes in one body
//   GET  /v1/admin/artifacts/files/{sha256}   {"sha256", "bytes"}; 404
//                                             NOT_FOUND when absent
//   PUT  /v1/admin/artifacts/files/{sha256}   body: the file's bytes
//          → 201 {"sha256", "bytes", "stored": true}, or 200 with
//            "stored": false when the store had it
//   GET|PUT /v1/admin/artifacts/parts/{sha256}   the same for a piece of a
//          file larger than one body (--max-body-bytes)
//   POST /v1/admin/artifacts/files/{sha256}   {"parts": ["<sha256>", ...]}
//          → 201 {"sha256", "bytes"}: the file made of those parts in
//            order, its SHA-256 checked; the parts are removed
//   POST /v1/admin/artifacts/manifests   body: a manifest (store/manifest.h)
//          → 201 {"artifact": "sha256:<hex>", "files", "bytes"}; 400
//            naming the files the store lacks. The digest registers the
//            model: POST /v1/admin/models {"artifact", "id"}
//   GET  /v1/admin/artifacts/manifests/{sha256}   the manifest
//
// Bad digests and bodies are 400 INVALID_INPUT.
//
// Threading: Handle from any thread; requests are served one at a time on
// the API's own thread (the store blocks on JetStream), apart from the
// catalog's routes, so a long upload never holds up a registration.
#pragma once

#include <string_view>

#include "common/event_loop.h"
#include "http/http.h"
#include "store/artifact_uploads.h"

namespace shoal::gateway {

class ArtifactsApi {
 public:
  // `store` is not owned and outlives this; `max_body_bytes`: the HTTP
  // server's limit, which clients size their parts by.
  ArtifactsApi(store::ModelStore* store, size_t max_body_bytes);
  ~ArtifactsApi();

  static bool Handles(std::string_view path);
  // For an authorized admin; `respond` is called from the API's thread.
  void Handle(http::Request&& req, http::Responder respond);

 private:
  http::Response Serve(const http::Request& req, const std::string& request_id);

  store::ModelStore* const store_;
  const size_t max_body_bytes_;
  store::ArtifactUploads uploads_;
  EventLoop loop_;
};

}  // namespace shoal::gateway
