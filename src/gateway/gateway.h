// Gateway: the HTTP edge. Stateless — run as many as you like; each has its
// own id, its own result inbox, and a watch on the catalog and the worker
// registry.
//
// Threading: I/O threads run routes; the sweeper thread finishes requests
// past their deadline (504) and drives the dispatcher's capacity waits;
// results arrive on the dispatcher's NATS delivery thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "gateway/dispatcher.h"
#include "gateway/http_server.h"
#include "gateway/pending.h"
#include "gateway/router.h"
#include "queue/catalog.h"
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
  queue::StreamLimits stream_limits;
};

class Gateway {
 public:
  static Result<std::unique_ptr<Gateway>> Start(GatewayOptions options);
  ~Gateway();

  int port() const { return server_->port(); }
  const std::string& id() const { return options_.id; }

  // Stops accepting, lets in-flight requests finish within `timeout`, stops.
  void Drain(std::chrono::milliseconds timeout);

 private:
  explicit Gateway(GatewayOptions options) : options_(std::move(options)) {}
  Status Init();
  void OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot);
  void SweepLoop();

  GatewayOptions options_;
  queue::ConnectionPtr nc_;
  queue::JsCtxPtr js_;
  queue::KvStorePtr models_kv_;
  queue::KvStorePtr workers_kv_;
  std::unique_ptr<queue::Catalog> catalog_;
  std::shared_ptr<const queue::CatalogSnapshot> static_catalog_;  // in-process mode
  std::unique_ptr<queue::WorkerRegistry> workers_;
  PendingTable pending_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<HttpServer> server_;
  std::mutex pools_mu_;
  std::set<std::string> pools_;  // work streams ensured; guarded by pools_mu_
  std::atomic<bool> ready_{false};
  std::atomic<bool> stop_sweeper_{false};
  std::thread sweeper_;
  bool stopped_ = false;
};

}  // namespace shoal::gateway
