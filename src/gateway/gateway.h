// Gateway: the HTTP edge. Stateless — run as many as you like.
//
// A gateway is a set of lanes, one per I/O thread. A lane is an event loop
// that serves its HTTP connections *and* owns a NATS connection, an inbox
// (_INBOX.<gateway-id>-<n>.>), the requests it has in flight and their
// deadlines: a request is read, published, collected and answered on one
// thread, with no locks and no hand-offs (Seastar-style shared nothing).
// Shared, thread-safe state is only the catalog and the worker registry,
// both fed by KV watches on their own threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "gateway/admin_api.h"
#include "gateway/dead_letters.h"
#include "gateway/dispatcher.h"
#include "gateway/http_server.h"
#include "gateway/pending.h"
#include "gateway/router.h"
#include "queue/catalog.h"
#include "queue/control_plane.h"
#include "queue/nats.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

struct GatewayOptions {
  std::string nats_url;
  HttpServerOptions http;
  std::string id;  // default: random
  std::chrono::milliseconds default_timeout{30000};
  std::chrono::milliseconds no_capacity_wait{2000};
  wire::ParseLimits limits;
  // Benchmark baseline: no NATS; models from `models_dir` run in-process.
  bool in_process = false;
  std::string models_dir;
  // How work reaches workers: the JetStream queue they pull from (the
  // product), or the push baseline (push_dispatcher.h) for benchmarks.
  DispatchMode dispatch = DispatchMode::kPull;
  queue::StreamLimits stream_limits;
  // Who may use /v1/admin (admin_api.h): holders of this token, or, when it
  // is empty, clients on this machine.
  std::string admin_token;
};

class Gateway {
 public:
  static Result<std::unique_ptr<Gateway>> Start(GatewayOptions options);
  ~Gateway();

  int port() const { return server_->port(); }
  const std::string& id() const { return options_.id; }

  // Stops accepting, lets in-flight requests finish within `timeout`, answers
  // the rest with 503, stops.
  void Drain(std::chrono::milliseconds timeout);

 private:
  struct Lane {
    EventLoop loop;
    PendingTable pending;
    std::unique_ptr<Dispatcher> dispatcher;
  };

  explicit Gateway(GatewayOptions options) : options_(std::move(options)) {}
  Status Init();
  Status ConnectControlPlane();
  void OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot);
  void Sweep(Lane& lane);
  size_t InFlight() const;
  bool Ready() const;

  GatewayOptions options_;
  // Control plane: KV buckets and watches, on a connection of their own.
  queue::ControlPlane control_;
  std::unique_ptr<queue::Catalog> catalog_;
  std::shared_ptr<const queue::CatalogSnapshot> static_catalog_;  // in-process mode
  std::unique_ptr<queue::WorkerRegistry> workers_;
  std::unique_ptr<DeadLetters> dead_letters_;
  std::unique_ptr<AdminApi> admin_;  // not in in-process mode
  std::mutex pools_mu_;
  std::set<std::string> pools_;  // work streams ensured; guarded by pools_mu_

  // Data plane.
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<bool> ready_{false};
  bool stopped_ = false;
};

}  // namespace shoal::gateway
