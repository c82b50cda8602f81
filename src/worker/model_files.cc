#include "worker/model_files.h"

#include <thread>

#include "common/clock.h"
#include "common/log.h"

namespace shoal::worker {

Result<std::string> ModelFiles::Directory(const std::string& digest, const std::string& what,
                                          FileLeases* leases) {
  if (auto it = leases->find(digest); it != leases->end()) return it->second->path();
  if (!cache_) {
    return InvalidInput(what + " is in the model store (" + digest + "), and this worker has no model cache");
  }
  auto last = SteadyClock::now();
  const auto progress = [&](std::string_view stage, uint64_t done, uint64_t total) {
    const auto now = SteadyClock::now();
    if (now - last >= std::chrono::milliseconds(500)) {  // a line every half second of a long fetch
      last = now;
      spdlog::info("worker: {} {}: {:.0f} % ({:.1f} of {:.1f} MB)", stage, what,
                   total ? 100.0 * done / total : 100.0, done / 1e6, total / 1e6);
    }
    return Status::Ok();
  };
  auto lease = cache_->Acquire(digest, progress);
  // A fetch cut by the connection (NO_CAPACITY) goes on where it stopped, a
  // few times, before the model is given up as failed to load.
  for (int retry = 1; retry <= kFetchRetries && !lease.ok() && lease.status().code() == Code::kNoCapacity;
       ++retry) {
    spdlog::warn("worker: fetching {} stopped ({}); resuming in {} s", what, lease.status().message(), retry);
    std::this_thread::sleep_for(std::chrono::seconds(retry));
    lease = cache_->Acquire(digest, progress);
  }
  if (!lease.ok()) return Status(lease.status().code(), what + ": " + lease.status().message());
  std::string path = (*lease)->path();
  leases->emplace(digest, std::move(lease).value());
  return path;
}

Result<std::vector<LoraSpec>> ModelFiles::LocalizeLoras(const std::vector<LoraSpec>& loras,
                                                        FileLeases* leases) {
  std::vector<LoraSpec> local = loras;
  for (LoraSpec& l : local) {
    if (l.artifact.empty()) continue;
    SHOAL_ASSIGN_OR_RETURN(l.path, Directory(l.artifact, "LoRA adapter " + l.name, leases));
  }
  return local;
}

Result<ModelSpec> ModelFiles::Localize(const ModelSpec& spec, FileLeases* leases) {
  ModelSpec local = spec;
  if (!spec.artifact.empty()) {
    SHOAL_ASSIGN_OR_RETURN(local.path, Directory(spec.artifact, spec.id, leases));
  }
  SHOAL_ASSIGN_OR_RETURN(local.loras, LocalizeLoras(spec.loras, leases));
  return local;
}

}  // namespace shoal::worker
