// ModelStore: model directories kept in a JetStream object store (ADR-20,
// queue/object_store.h) that every worker of every machine reaches — the
// engine Shoal already runs on, replicated with it on a cluster:
//
//   bucket shoal_artifacts
//     files/<sha256 hex>       a file's bytes, stored once whatever model
//                              or path holds it (a LoRA's base, a re-push)
//     manifests/<sha256 hex>   a model's manifest (store/manifest.h), named
//                              by its digest
//
// Push hashes a directory, stores the files the bucket lacks (an object
// whose digest and size already match is not sent again, so a push that
// failed half-way resumes), then the manifest: a manifest that can be found
// has all its files.
//
// FetchFile fetches one file into a partial file beside a `.resume` record
// (the chunk object's nuid and the read position), so a fetch that was
// interrupted — the worker killed, the link down — goes on from where it
// stopped; the bytes are checked against the manifest's SHA-256 before the
// partial file is handed over.
//
// Threading: thread-safe, blocking (queue/object_store.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "queue/object_store.h"
#include "store/manifest.h"

namespace shoal::store {

inline constexpr std::string_view kArtifactBucket = "shoal_artifacts";

// Progress of long work: a stage ("hashing", "uploading", "fetching"), bytes
// done and the total. Returning an error stops the work with it.
using Progress = std::function<Status(std::string_view stage, uint64_t done, uint64_t total)>;

struct PushResult {
  ModelManifest manifest;
  std::string digest;
  uint64_t bytes_sent = 0;     // files the store lacked
  uint64_t bytes_present = 0;  // files it had already
};

struct FetchResult {
  uint64_t bytes_fetched = 0;  // this time
  uint64_t bytes_resumed = 0;  // kept from an interrupted fetch
};

class ModelStore {
 public:
  // `js` outlives the store.
  static Result<std::unique_ptr<ModelStore>> Open(jsCtx* js, int replicas = 0);
  // Over a connection of its own (fetches then never hold up the caller's
  // other traffic).
  static Result<std::unique_ptr<ModelStore>> Connect(const queue::ConnectOptions& options,
                                                     int replicas = 0);

  Result<PushResult> Push(const std::string& dir, const Progress& progress = nullptr);
  // The manifest of `digest`, its text checked against the digest.
  // NOT_FOUND when the store has none.
  Result<ModelManifest> Manifest(std::string_view digest);
  // Fetches `file` into `partial` (resuming it), its SHA-256 checked; on an
  // error the partial file and its record stay for the next try, except
  // when the bytes were wrong (both removed).
  Result<FetchResult> FetchFile(const ManifestFile& file, const std::string& partial,
                                const Progress& progress = nullptr);

  queue::ObjectStore& objects() { return *objects_; }

 private:
  explicit ModelStore(std::unique_ptr<queue::ObjectStore> objects) : objects_(std::move(objects)) {}
  queue::ConnectionPtr nc_;  // when connected by Connect; before what uses it
  queue::JsCtxPtr js_;
  std::unique_ptr<queue::ObjectStore> objects_;
};

std::string FileObjectName(std::string_view sha256_hex);  // "files/<hex>"
std::string ManifestObjectName(std::string_view digest);  // "manifests/<hex>"

}  // namespace shoal::store
