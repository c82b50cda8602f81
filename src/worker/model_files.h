// Where a model's files are on this worker: its `path`, or — for a model
// pushed to the model store (ModelSpec::artifact, LoraSpec::artifact) — its
// entry in the worker's model cache (store/model_cache.h), fetched and
// checked file by file before anything loads from it. The leases keep those
// entries on disk while the model that uses them is loaded. A fetch the
// connection cut is resumed a few times (1, 2, 3 s apart) before the load
// fails; a model that fails to load answers MODEL_LOAD_FAILED until it is
// registered again (resident_models.h).
//
// Threading: any thread; calls block while files are fetched or checked.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "catalog/model_spec.h"
#include "common/status.h"
#include "store/model_cache.h"

namespace shoal::worker {

// Cache entries in use, by digest.
using FileLeases = std::map<std::string, std::unique_ptr<store::CacheLease>>;

class ModelFiles {
 public:
  // `cache`: null when this worker has none (models with an artifact then
  // fail to load, saying so).
  explicit ModelFiles(store::ModelCache* cache) : cache_(cache) {}

  // `spec` with local paths for the model and its adapters; the entries
  // used are added to `leases`. Shows progress in the log while it fetches.
  Result<ModelSpec> Localize(const ModelSpec& spec, FileLeases* leases);
  // The same for a list of adapters alone.
  Result<std::vector<LoraSpec>> LocalizeLoras(const std::vector<LoraSpec>& loras,
                                              FileLeases* leases);

 private:
  static constexpr int kFetchRetries = 3;
  // The local directory of artifact `digest` (for `what`, in log lines).
  Result<std::string> Directory(const std::string& digest, const std::string& what,
                                FileLeases* leases);

  store::ModelCache* cache_;
};

}  // namespace shoal::worker
