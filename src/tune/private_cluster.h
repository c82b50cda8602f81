// The cluster `shoal tune` measures on: its own nats-server (JetStream, data
// in a temporary directory, a free loopback port), one worker and one
// gateway in this process, as `shoal up` runs them — nothing shared with a
// cluster the machine may also run.
//
// Each candidate configuration is registered under an id of its own
// (`<model>.t<n>`) and the one before it removed, so a request answered for
// the new id was served by the new configuration: the worker loads a model
// afresh for a new spec, and there is no moment when the old one could
// answer for it. Threads and precision are spec fields, so a reload is all
// a candidate needs; the worker itself never restarts.
//
// Threading: one thread at a time (the tuner's).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "admin/catalog_admin.h"
#include "catalog/model_spec.h"
#include "gateway/gateway.h"
#include "loadtest/load_generator.h"
#include "queue/nats_server.h"
#include "worker/worker.h"

namespace shoal::tune {

struct PrivateClusterOptions {
  int executors = 1;  // the worker's (`shoal up`'s default)
};

class PrivateCluster {
 public:
  static Result<std::unique_ptr<PrivateCluster>> Start(const PrivateClusterOptions& options);
  ~PrivateCluster();  // drains the gateway and the worker, stops nats-server, removes its data

  int gateway_port() const { return gateway_->port(); }

  // Registers `spec` (pinned, so the worker loads it at once), removes the
  // model installed before, and waits until `probe` is answered 200 (the
  // model is loaded and the gateway routes to it), up to `timeout`.
  Status Install(ModelSpec spec, const loadtest::MixEntry& probe, std::chrono::seconds timeout);

 private:
  PrivateCluster() = default;

  std::string dir_;
  std::unique_ptr<queue::NatsServer> nats_;
  std::unique_ptr<admin::CatalogAdmin> admin_;
  std::unique_ptr<worker::Worker> worker_;
  std::unique_ptr<gateway::Gateway> gateway_;
  std::string installed_;  // the model id registered last
};

}  // namespace shoal::tune
