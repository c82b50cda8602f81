// ControlPlane: the NATS side every Shoal process needs besides its data
// path — a plain connection, its JetStream context, and the KV buckets of
// the catalog, its versions and the worker heartbeats, created if missing.
#pragma once

#include <string>

#include "queue/nats.h"

namespace shoal::queue {

struct ControlPlane {
  ConnectionPtr nc;
  JsCtxPtr js;
  KvStorePtr models;   // shoal_models
  KvStorePtr versions;  // shoal_model_versions (catalog/model_version.h)
  KvStorePtr workers;  // shoal_workers
  // JetStream replicas for what this process creates (topology.h,
  // StreamLimits::replicas): 0 leaves it to the server's default of 1.
  int replicas = 0;

  // `url` may list several servers of a cluster, comma-separated.
  static Result<ControlPlane> Connect(const std::string& url, const std::string& name,
                                      const NatsSecurity& security = {}, int replicas = 0);
};

}  // namespace shoal::queue
