// Gateway: the HTTP edge. Stateless — run as many as you like.
//
// A gateway is a set of lanes, one per I/O thread. A lane is an event loop
// that serves its HTTP connections *and* owns a NATS connection, an inbox
// (_INBOX.<gateway-id>-<n>.>), the requests it has in flight and their
// deadlines: a request is read, published, collected and answered on one
// thread, with no locks and no hand-offs (Seastar-style shared nothing).
// Shared, thread-safe state is only the catalog, the worker registry and
// the API keys (fed by KV watches on their own threads), the rate limiter,
// and the admission counter.
//
// Every request but the probes passes, in order: admission (a bound on
// requests in flight: 503 OVERLOADED; admission.h), authentication (401/403,
// or 503 when the keys cannot be read; auth.h), then the router — which
// checks the key's model scope (403) and its rate limits (429;
// rate_limiter.h) — or the admin API (admin_api.h), or the Files and Batch
// APIs (files_api.h, batches_api.h; files and jobs in JetStream, so any
// gateway serves them). Each gateway also runs batch jobs (batch_runner.h),
// sending their requests through its own router at batch priority.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "admin/evaluation.h"
#include "gateway/admin_api.h"
#include "gateway/artifacts_api.h"
#include "gateway/canary_monitor.h"
#include "gateway/admission.h"
#include "gateway/auth.h"
#include "gateway/batch_runner.h"
#include "gateway/batches_api.h"
#include "gateway/dashboard.h"
#include "gateway/queue_gauges.h"
#include "gateway/dead_letters.h"
#include "gateway/dispatcher.h"
#include "gateway/files_api.h"
#include "gateway/gateway_metrics.h"
#include "http/server.h"
#include "gateway/payload_offloader.h"
#include "gateway/pending.h"
#include "gateway/rate_limiter.h"
#include "gateway/request_tracer.h"
#include "gateway/router.h"
#include "queue/catalog_watch.h"
#include "queue/control_plane.h"
#include "queue/keys.h"
#include "queue/nats.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

struct GatewayOptions {
  std::string nats_url;
  queue::NatsSecurity nats_security;  // TLS and credentials for every connection
  http::ServerOptions http;  // with tls_cert_file/tls_key_file: HTTPS
  std::string id;  // default: random
  std::chrono::milliseconds default_timeout{30000};
  std::chrono::milliseconds no_capacity_wait{2000};
  // How long an item may go unstored by its work stream before the pool is
  // taken to be between leaders and its items are hedged, or stored and
  // undelivered before idle workers get a copy (queue_dispatcher.h).
  // 0: never hedge.
  std::chrono::milliseconds hedge_after{500};
  wire::ParseLimits limits;
  // Where items too large for a NATS message wait while queued
  // (queue/payload_store.h: a directory or s3://bucket/prefix); pull
  // dispatch only. Empty: queue::DefaultPayloadStoreUrl().
  std::string payload_store;
  // Items over this many bytes go to the payload store even when they would
  // fit a message (those that would not always do).
  size_t offload_bytes = 1000 * 1000;
  // How work reaches workers: empty, the JetStream queue they pull from (the
  // product); a benchmark's baseline gives its own (src/baselines), and
  // `dispatch_name` for the log.
  DispatcherFactory dispatchers;
  std::string dispatch_name;
  // A fixed catalog and no NATS at all (a baseline's, with its own
  // dispatchers); null: the shoal_models bucket, watched.
  std::shared_ptr<const queue::CatalogSnapshot> catalog;
  queue::StreamLimits stream_limits;
  // Who may call (auth.h): kNone leaves the data routes open; kKeys needs
  // an API key of the shoal_keys bucket on every route but the probes.
  AuthMode auth = AuthMode::kNone;
  // Acts as an admin key for every model; with auth none, the only way to
  // the admin routes from another machine (else local clients only).
  std::string admin_token;
  // Requests in flight at once, over all lanes; past it 503 OVERLOADED.
  // 0: unbounded.
  size_t max_in_flight = 4096;
  // Requests of batch jobs this gateway keeps in flight at once, over all
  // the jobs it runs (batch_runner.h).
  size_t batch_in_flight = 256;
  // The model cache the admin API checks models from the model store in
  // (store/model_cache.h); empty dir: store::DefaultModelCacheDir().
  std::string cache_dir;
  uint64_t cache_bytes = 20ull << 30;
  // The admin API refuses a model whose files state no license unless its
  // registrant does (admin/provenance.h).
  bool require_license = false;
  // Traces (request_tracer.h): the OTLP/HTTP collector (a base URL, as
  // OTEL_EXPORTER_OTLP_ENDPOINT; empty: that variable's, else none), and
  // the share of requests without a traceparent that start a trace.
  std::string otlp_endpoint;
  double trace_sample = 1.0;
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

  explicit Gateway(GatewayOptions options)
      : options_(std::move(options)), admission_(options_.max_in_flight) {}
  Status Init();
  Status ConnectControlPlane();
  // Runs batch jobs through the router (after Init has made it).
  Status StartBatchRunner();
  // One JSON request through a lane's router with no key (every model, no
  // limits), waited for: the admin API's evaluations (admin/evaluation.h).
  // Never from a lane's own thread.
  Result<admin::ServedAnswer> ServeInProcess(const std::string& path, const std::string& body);
  // The lane's dispatcher: the baseline's, or the queue's.
  Result<std::unique_ptr<Dispatcher>> MakeDispatcher(const LaneSetup& lane);
  std::shared_ptr<const queue::CatalogSnapshot> Catalog() const;
  // The HTTP server's handler: admission, authentication, then the route.
  void Serve(size_t lane, http::Request&& req, http::Responder respond);
  // `respond`, and when the response head goes out: counted in the metrics
  // and the dashboard's history, and logged at debug level.
  // A traced request (request_tracer.h) gets its trace here, and its span
  // ends with the response's last part.
  http::Responder Observed(http::Request& req, http::Responder respond);
  void OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot);
  void Sweep(Lane& lane);
  size_t InFlight() const;
  // The batch jobs not finished, cluster-wide (for /v1/cluster, the dashboard).
  std::vector<queue::BatchRecord> BatchJobs() const;
  bool Ready() const;

  GatewayOptions options_;
  // Before anything that may hold a ticket (connections, the admin thread),
  // so that it outlives them.
  Admission admission_;
  // Control plane: KV buckets and watches, on a connection of their own.
  queue::ControlPlane control_;
  std::unique_ptr<queue::CatalogWatch> catalog_;  // null with a fixed catalog
  std::unique_ptr<queue::WorkerRegistry> workers_;
  queue::KvStorePtr keys_bucket_;          // shoal_keys; not without NATS
  std::unique_ptr<queue::KeyRing> keys_;   // auth keys only
  std::unique_ptr<DeadLetters> dead_letters_;
  std::unique_ptr<store::ModelStore> model_store_;  // the admin API's, for models registered
  std::unique_ptr<store::ModelCache> model_cache_;  // by artifact (not without NATS)
  std::unique_ptr<AdminApi> admin_;  // not without NATS
  std::unique_ptr<ArtifactsApi> artifacts_;  // uploads to model_store_; not without NATS
  std::unique_ptr<queue::FileStore> file_store_;  // not without NATS
  std::unique_ptr<FilesApi> files_;               // over file_store_
  std::unique_ptr<queue::BatchStore> batch_store_;  // not without NATS
  std::unique_ptr<BatchesApi> batches_;             // over batch_store_ and file_store_
  std::mutex pools_mu_;
  std::set<std::string> pools_;  // work streams ensured; guarded by pools_mu_

  // Data plane.
  std::unique_ptr<Authenticator> auth_;
  RateLimiter limiter_;
  // What this gateway sees of canaries; one that trips asks the admin API
  // to end it.
  CanaryMonitor canaries_{[this](const std::string& model, uint32_t version, const std::string& why) {
    if (admin_) admin_->EndCanary(model, version, why);
  }};
  GatewayMetrics metrics_;
  StalledPools stalled_pools_;  // the lanes' (queue_dispatcher.h)
  // GET / and /v1/dashboard; its sampler stops in Drain, before the
  // registry and catalog it reads go.
  std::unique_ptr<Dashboard> dashboard_;
  // The backlog and capacity gauges of GET /metrics (not without NATS);
  // stopped with the dashboard.
  std::unique_ptr<QueueGauges> queue_gauges_;
  // Traces, when a collector is configured; before the lanes, whose
  // requests record spans as they finish.
  std::unique_ptr<trace::SpanExporter> spans_;
  std::unique_ptr<RequestTracer> tracer_;
  // The queue's dispatchers only; before the lanes, whose dispatchers use it.
  std::unique_ptr<PayloadOffloader> offloader_;
  // Before the lanes: their pending requests hold its answers' callbacks.
  std::unique_ptr<BatchRunner> batch_runner_;  // not without NATS
  std::atomic<size_t> batch_lane_{0};          // the lane its next request goes to
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<http::Server> server_;
  std::atomic<bool> ready_{false};
  bool stopped_ = false;
};

}  // namespace shoal::gateway
