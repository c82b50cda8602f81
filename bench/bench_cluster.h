// BenchCluster: the all-in-one cluster a system benchmark drives in its own
// process — nats-server (a child, its data in a directory of its own), the
// benchmark's profiles registered (each loaded and checked), one worker
// and a gateway on a free port — and, on destruction, drained, stopped
// and its directory removed. Shared by the generation, llama.cpp, upstream
// and generation-agents benchmarks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "catalog/model_spec.h"
#include "gateway/gateway.h"
#include "queue/nats_server.h"
#include "worker/worker.h"

namespace shoal::bench {

class BenchCluster {
 public:
  // Null when a part fails to start or a profile to register (said on
  // stderr, prefixed with `who`). `worker` gets the cluster's NATS URL; the
  // call returns once every profile is resident (or after 30 s).
  // `gateway` gets the NATS URL and a free port.
  static std::unique_ptr<BenchCluster> Start(const char* who, const std::string& dir,
                                             const std::vector<ModelSpec>& specs, worker::WorkerOptions worker,
                                             gateway::GatewayOptions gateway = {});
  ~BenchCluster();

  int port() const { return gateway_->port(); }
  std::string nats_url() const { return nats_->url(); }
  pid_t nats_pid() const { return nats_->pid(); }
  const worker::Worker& worker() const { return *worker_; }

 private:
  BenchCluster() = default;

  std::string dir_;
  std::unique_ptr<queue::NatsServer> nats_;
  std::unique_ptr<worker::Worker> worker_;
  std::unique_ptr<gateway::Gateway> gateway_;
};

}  // namespace shoal::bench
