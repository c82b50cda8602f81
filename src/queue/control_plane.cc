#include "queue/control_plane.h"

#include "queue/topology.h"
#include "queue/subjects.h"

namespace shoal::queue {

Result<ControlPlane> ControlPlane::Connect(const std::string& url, const std::string& name,
                                           const NatsSecurity& security, int replicas) {
  ControlPlane cp;
  cp.replicas = replicas;
  auto nc = queue::Connect({.url = url, .security = security, .name = name});
  if (!nc.ok()) return nc.status();
  cp.nc = std::move(nc).value();
  auto js = NewJetStream(cp.nc.get());
  if (!js.ok()) return js.status();
  cp.js = std::move(js).value();
  auto models = OpenBucket(cp.js.get(), kModelsBucket, 0, replicas);
  if (!models.ok()) return models.status();
  cp.models = std::move(models).value();
  auto versions = OpenBucket(cp.js.get(), kVersionsBucket, 0, replicas);
  if (!versions.ok()) return versions.status();
  cp.versions = std::move(versions).value();
  auto workers = OpenBucket(cp.js.get(), kWorkersBucket, kWorkerEntryTtlMs, replicas);
  if (!workers.ok()) return workers.status();
  cp.workers = std::move(workers).value();
  return cp;
}

}  // namespace shoal::queue
