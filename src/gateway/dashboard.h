// Dashboard: the gateway's live dashboard.
//
//   GET /              one self-contained HTML page (dashboard.html, inline
//                      CSS and JS, no external assets), embedded in the
//                      binary at build time; open, like /metrics and the
//                      probes: it holds no figures, it fetches them
//   GET /v1/dashboard  the figures, as JSON: this gateway and its traffic
//                      over the last minutes (dashboard_history.h), the
//                      cluster (catalog/cluster_view.h, as GET /v1/cluster)
//                      and its totals. Same authorization as /v1/cluster —
//                      admin token, admin key, or local clients only when
//                      the gateway has neither (auth.h) — since it shows
//                      the same things; the page asks for a key when it
//                      gets a 401 or 403 and keeps it in localStorage.
//
//   {"gateway": {"id", "ready", "lanes", "auth", "uptime_s", "in_flight",
//                "period_ms", "window_s", "now_unix_ms"},
//    "history": {"responses_total", "errors_total", "samples": [...]},
//    "totals":  {"workers", "executors", "memory_used", "memory_budget",
//                "models", "models_resident", "models_loading",
//                "waiting", "worker_queued", "worker_in_flight"},
//    "cluster": <GET /v1/cluster> | null (in-process mode: no cluster),
//    "versions": [...] (dashboard_versions.h; [] in in-process mode)}
//
// The history's throughput and latency are this gateway's (each gateway
// keeps its own); the cluster figures are every worker's. The page's own
// polls of /v1/dashboard are not counted, so an open dashboard does not
// show itself as traffic.
//
// Threading: the page and Record are for any lane. The sampler and the
// /v1/dashboard answers run on the dashboard's own thread (the cluster view
// asks JetStream for per-model counts: blocking requests, never on a lane).
// Start once; Stop before the sources (registry, catalog) go; Record may
// still be called after Stop (it only touches the history).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/event_loop.h"
#include "gateway/canary_monitor.h"
#include "gateway/dashboard_history.h"
#include "gateway/dashboard_versions.h"
#include "http/http.h"
#include "queue/batch_store.h"
#include "queue/catalog_watch.h"
#include "queue/nats.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

struct DashboardOptions {
  std::chrono::milliseconds period{2000};  // one sample per period
  std::chrono::seconds window{600};        // kept: window / period samples
};

// Where the figures come from; none owned, each outlives the Dashboard's
// Stop. The cluster sources are null in in-process mode.
struct DashboardSources {
  std::string gateway_id;
  std::string auth;  // "none" or "keys", shown on the page
  size_t lanes = 0;
  std::function<size_t()> in_flight;
  std::function<bool()> ready;
  std::function<std::shared_ptr<const queue::CatalogSnapshot>()> catalog;
  queue::WorkerRegistry* workers = nullptr;
  jsCtx* js = nullptr;
  std::function<std::vector<queue::BatchRecord>()> batch_jobs;  // unset: none
  kvStore* versions = nullptr;                                    // the versions bucket
  const CanaryMonitor* canaries = nullptr;
};

class Dashboard {
 public:
  Dashboard(DashboardOptions options, DashboardSources sources);
  ~Dashboard();  // Stop()

  // Starts the sampler.
  void Start();
  // Stops the sampler and the JSON route's thread (what was posted is
  // answered first). Idempotent.
  void Stop();

  // GET /: the page.
  static bool IsPage(const http::Request& req) { return req.method == "GET" && req.path == "/"; }
  static http::Response Page();
  // /v1/dashboard, for an authorized request; `respond` is called from the
  // dashboard's thread.
  static bool Handles(std::string_view path) { return path == "/v1/dashboard"; }
  void Handle(http::Request&& req, http::Responder respond);

  // A response whose head went out (a stream's: its first part), into the
  // history.
  void Record(int status, double seconds) { history_.Record(status, seconds); }

  DashboardHistory& history() { return history_; }

 private:
  http::Response Serve(const http::Request& req);  // on loop_
  void TakeSample();                           // on loop_

  const DashboardOptions options_;
  const DashboardSources sources_;
  const SteadyClock::time_point started_ = SteadyClock::now();
  DashboardHistory history_;
  VersionsPanel versions_;  // on loop_
  EventLoop loop_;
  bool started_loop_ =
      false;  // Start and Stop are called from one thread (the gateway's lifecycle)
  std::atomic<bool> stopped_{false};  // then Handle answers at once: loop_ would never run it
};

}  // namespace shoal::gateway
