// Worker: pulls work for the models it serves, batches it, runs it. A thin
// composition of two parts and the executors between them:
//
//   intake (intake.h) ─────────▶ LocalQueue ──▶ Executors ──▶ results + acks
//     its loop and data connection, pulls and their plans, cancellations
//   residency (resident_models.h)
//     the catalog watch, loads, eviction, placement; installs models in
//     ServedModels, which the intake reads
//   keeper thread
//     every 50 ms: pull upkeep, +WPI for long waits, message frees
//   control thread
//     heartbeats every second, placement every 100 ms: the calls that wait
//     on JetStream (up to its timeout while a cluster elects a leader), so
//     the keeper's upkeep never waits behind them
//
// The control connection (queue/control_plane.h) carries KV, streams and
// heartbeats; the intake's connection carries work, results and acks.
//
// Every accepted item holds a ticket (item_ticket.h) until it is settled,
// and every ticket a place in the item gate, so a drain waits on the gate.
//
// Threading: each part documents its own. The worker's own state is set at
// Start and read-only after, but for the heartbeat (`heartbeat_mu_`: one
// written at a time) and the drain flag.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/gate.h"
#include "queue/catalog_watch.h"
#include "queue/control_plane.h"
#include "queue/nats.h"
#include "queue/payload_store.h"
#include "queue/pull_subscriber.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"
#include "worker/batch_runner.h"
#include "worker/cancelled_requests.h"
#include "worker/executor.h"
#include "worker/item_spans.h"
#include "worker/generation_engine.h"
#include "worker/intake.h"
#include "worker/local_queue.h"
#include "worker/model_files.h"
#include "runtime/registry/registry.h"
#include "worker/metrics_endpoint.h"
#include "worker/resident_models.h"
#include "worker/served_models.h"
#include "worker/worker_metrics.h"

namespace shoal::worker {

struct WorkerOptions {
  std::string nats_url;
  queue::NatsSecurity nats_security;  // TLS and credentials for every connection
  std::string pool = "default";
  // Serve only these model ids (empty: every model of the pool whose runtime
  // this binary has).
  std::vector<std::string> models;
  int executors = 1;
  // Cores one executor's batch may use (0: this machine's cores divided
  // among the executors).
  int threads_per_executor = 0;
  std::string id;  // default: <host>-<pid>-<random>
  queue::PullTiming pull;
  queue::StreamLimits stream_limits;
  // Residency: the memory loaded models may take (0: DefaultMemoryBudget()),
  // and what goes first when a model needs room. The executors of a CPU
  // worker share one memory and its models, so the budget is per worker.
  uint64_t memory_budget = 0;
  EvictionPolicyKind eviction = EvictionPolicyKind::kCostAware;
  size_t max_models = 0;  // kCount only: the most models loaded at once
  // Where the gateways put items too large for a NATS message
  // (queue/payload_store.h). Empty: queue::DefaultPayloadStoreUrl().
  std::string payload_store;
  // GET /metrics (worker_metrics.h) on this port of metrics_host; -1: not
  // served, 0: any free port (Worker::metrics_port says which).
  int metrics_port = -1;
  std::string metrics_host = "127.0.0.1";
  // The model cache (store/model_cache.h): where models pushed to the model
  // store are fetched to and loaded from, and the disk it may take.
  // Empty dir: store::DefaultModelCacheDir().
  std::string cache_dir;
  uint64_t cache_bytes = 20ull << 30;
  store::CacheVerify cache_verify = store::CacheVerify::kChanged;
  // Where traced items' spans go (item_spans.h): an OTLP/HTTP collector's
  // base URL; empty: OTEL_EXPORTER_OTLP_ENDPOINT's, else none.
  std::string otlp_endpoint;
  // How runtime processes run (models with `process: shared` or `own`);
  // `metrics` is set by the worker.
  RuntimeProcessSettings runtime_processes;
};

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> Start(WorkerOptions options);
  ~Worker();

  // Stops pulling, finishes queued and running work within `timeout`, hands
  // back (nak) whatever is left, and leaves the worker registry.
  void Drain(std::chrono::milliseconds timeout);

  const std::string& id() const { return options_.id; }
  // Model ids this worker serves (loaded or on demand), and what is loaded.
  std::vector<std::string> ServedModels() const { return residency_->Wanted(); }
  ResidencyView residency() const { return residency_->View(); }
  // Batches this worker has run (started) so far, and the items in them.
  LocalQueue::Totals batch_totals() const { return queue_.totals(); }
  // Items waiting in the local queue now.
  size_t local_queue_size() const { return queue_.size(); }
  // Pull requests and probes sent to JetStream so far.
  uint64_t pull_requests_sent() const { return intake_->pull_requests_sent(); }
  // The generation engine of a generator this worker has loaded.
  std::optional<SequenceEngine::Stats> generation(const std::string& model) const;
  // Where GET /metrics is served (-1: it is not).
  int metrics_port() const;
  // The body of GET /metrics.
  std::string RenderMetrics();
  // Its way in: another way in (the push baseline's) subscribes here.
  Intake& intake() { return *intake_; }

 private:
  explicit Worker(WorkerOptions options) : options_(std::move(options)) {}
  Status Init();
  int ThreadsPerBatch() const;  // cores one batch (or generation step) may use
  void KeeperLoop();
  void ControlLoop();
  void Heartbeat();

  WorkerOptions options_;
  WorkerMetrics metrics_;  // before anything that records into it
  std::unique_ptr<ModelRuntimes> runtimes_;  // outlives the models loaded through it
  queue::ControlPlane control_;  // KV, streams, heartbeats
  std::unique_ptr<queue::WorkerRegistry> registry_;  // the other workers, for placement
  Gate items_;  // every accepted item's ticket holds it; before what holds tickets
  CancelledRequests cancelled_;
  LocalQueue queue_;
  queue::MsgReaper reaper_;  // reaped by the keeper
  std::unique_ptr<queue::PayloadStore> payloads_;  // before runner_, which reads from it
  std::unique_ptr<trace::SpanExporter> span_exporter_;  // before runner_, which records
  std::unique_ptr<ItemSpans> spans_;                    // into it (null: no traces)
  std::unique_ptr<store::ModelStore> model_store_;  // pushed models: their store, their
  std::unique_ptr<store::ModelCache> model_cache_;  // copies on this disk, and where a
  std::unique_ptr<ModelFiles> model_files_;         // model's files are (before residency_)
  worker::ServedModels served_;
  std::unique_ptr<Intake> intake_;
  std::unique_ptr<BatchRunner> runner_;  // on the intake's connection
  std::vector<std::unique_ptr<Executor>> executors_;
  std::unique_ptr<ResidentModels> residency_;
  std::unique_ptr<queue::CatalogWatch> catalog_;
  std::mutex heartbeat_mu_;  // one heartbeat written at a time
  std::atomic<bool> draining_{false};
  std::atomic<bool> stop_keeper_{false};  // and the control thread
  std::thread keeper_;
  std::thread control_thread_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;  // reads everything above
  bool drained_ = false;
};

}  // namespace shoal::worker
