// ControlPlane: the NATS side every Shoal process needs besides its data
// path — a plain connection, its JetStream context, and the two KV buckets
// (the catalog and the worker heartbeats), created if missing.
#pragma once

#include <string>

#include "queue/nats.h"

namespace shoal::queue {

struct ControlPlane {
  ConnectionPtr nc;
  JsCtxPtr js;
  KvStorePtr models;   // shoal_models
  KvStorePtr workers;  // shoal_workers

  static Result<ControlPlane> Connect(const std::string& url, const std::string& name,
                                      const NatsSecurity& security = {});
};

}  // namespace shoal::queue
