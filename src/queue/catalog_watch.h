// The model catalog: the `shoal_models` KV bucket (one key per model id, the
// value its spec as JSON) and a local, always-current copy of it. A version
// kept besides the serving one ("id@N", catalog/names.h) is an entry of its
// own, under the key "id=N" ('@' is no KV key character, '=' no model id
// character); the copy names it "id@N".
//
// Threading: Snapshot is called from any thread (gateway I/O threads,
// worker executors); updates come from the KvWatch thread. Readers take
// `mu_` only to copy a shared_ptr to an immutable snapshot; an update builds
// a new snapshot and swaps it in (copy-on-write), so a reader never sees a
// half-applied change.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "catalog/model_spec.h"
#include "queue/kv_watch.h"
#include "queue/nats.h"

namespace shoal::queue {

using CatalogSnapshot = std::map<std::string, std::shared_ptr<const ModelSpec>, std::less<>>;

// The KV key of a catalog name, and back.
std::string CatalogKey(std::string_view name);
std::string NameOfCatalogKey(std::string_view key);

// Writes (validated) and removes catalog entries, by name.
Status PutModel(kvStore* models, const ModelSpec& spec);
Status DeleteModel(kvStore* models, std::string_view id);

class CatalogWatch {
 public:
  // Called on the watch thread after every change, with the new snapshot.
  using OnChange = std::function<void(std::shared_ptr<const CatalogSnapshot>)>;

  // Starts watching; returns once the existing entries are loaded (or after
  // `timeout_ms`, with an error).
  static Result<std::unique_ptr<CatalogWatch>> Open(kvStore* models, OnChange on_change,
                                               int timeout_ms = 5000);

  std::shared_ptr<const CatalogSnapshot> Snapshot() const;

 private:
  CatalogWatch() = default;
  void Apply(const KvChange& change);

  OnChange on_change_;
  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  bool ready_ = false;                                // guarded by mu_
  std::shared_ptr<const CatalogSnapshot> snapshot_;   // guarded by mu_
  std::unique_ptr<KvWatch> watch_;                    // last: stops first
};

}  // namespace shoal::queue
