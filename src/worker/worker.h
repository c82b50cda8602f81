// Worker: pulls work for the models it serves, batches it, runs it.
//
//   catalog watch ──▶ the models it serves; pinned ones queued to load
//   loader thread ──▶ make room, load a model, ensure its consumer, add a pull slot
//   intake loop ────▶ LocalQueue ──▶ Executors ──▶ results + acks
//   keeper thread ──▶ pull credit top-up, +WPI for long waits, heartbeats,
//                     placement (what to load or let go)
//
// The intake loop owns the data connection (loop_connection.h): it reads
// the socket itself and queues work directly, so a message reaches an
// executor in one thread hop, and it writes what executors publish, a batch
// at a time. The control connection carries KV, admin and heartbeats.
//
// The intake loop also takes cancellations (shoal.cancel.<pool>): requests
// whose clients hung up, whose items BatchRunner then drops unrun.
//
// For the push baseline (gateway/push_dispatcher.h) the intake loop also
// subscribes to shoal.push.<worker-id>.>: a gateway that assigns requests to
// workers sends items there over core NATS, and they join the same local
// queue as pulled ones (no ack, no redelivery; see work_item.h).
//
// Which models are loaded is the residency half's call (worker_residency.cc):
// every catalog model of its pool whose runtime it has is served — the
// gateways queue requests for it — but only pinned ones load at start; the
// others load when work for them waits in the stream and placement
// (placement.h) picks this worker, and are evicted under memory pressure
// (residency_policy.h) or when an extra replica goes cold.
//
// What to pull is the PullPlanner's call (pull_planner.h): one predicted
// batch per free executor for the models that need it most, a one-message
// doorbell on the rest, nothing while every executor is busy — so work waits
// in the shared stream for the first free device. Plans are made when work
// arrives, a request ends, a batch finishes, and on the keeper's tick —
// always on the intake loop.
//
// Threading: catalog changes arrive on the catalog watch thread; deliveries
// on the intake loop; batches on executor threads; upkeep and placement on
// the keeper thread; loads on the loader thread. `models_mu_` guards the
// served-model maps and the residency state.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/event_loop.h"
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
#include "worker/generation_engine.h"
#include "worker/local_queue.h"
#include "worker/metrics_endpoint.h"
#include "worker/pull_planner.h"
#include "worker/residency_policy.h"
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
};

// Half this machine's physical memory.
uint64_t DefaultMemoryBudget();

// What a worker holds, for tests and `shoal status` (heartbeats carry it).
struct ResidencyView {
  uint64_t budget = 0, used = 0;
  std::vector<std::string> resident, loading, failed;
  Residency::Counters counters;
  uint64_t load_failures = 0;
  // Placement decisions made so far (one per keeper tick that could read the
  // stream): what "placement has looked" means to a caller.
  uint64_t placement_rounds = 0;
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
  std::vector<std::string> ServedModels() const;
  ResidencyView residency() const;
  // Batches this worker has run (started) so far, and the items in them.
  LocalQueue::Totals batch_totals() const { return queue_.totals(); }
  // Items waiting in the local queue now.
  size_t local_queue_size() const { return queue_.size(); }
  // Pull requests and probes sent to JetStream so far.
  uint64_t pull_requests_sent() const { return pull_->requests_sent(); }
  // The generation engine of a generator this worker has loaded.
  std::optional<GenerationEngine::Stats> generation(const std::string& model) const;
  // Where GET /metrics is served (-1: it is not).
  int metrics_port() const;
  // The body of GET /metrics.
  std::string RenderMetrics();
  // Pushed items (push baseline) queued here so far.
  uint64_t pushed_items() const { return pushed_items_.load(std::memory_order_relaxed); }

 private:
  explicit Worker(WorkerOptions options);
  Status Init();
  // Residency (worker_residency.cc).
  void OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot);
  void QueueLoad(const std::string& id);
  void LoaderLoop();
  void Load(const std::string& id);  // on the loader thread
  void Install(const std::shared_ptr<const ModelSpec>& spec, std::unique_ptr<Model> model, Status load_error,
               SteadyClock::duration load_time);
  void Unload(const std::string& id, std::string_view why);
  int ThreadsPerBatch() const;  // cores one batch (or generation step) may use
  void Place();  // on the keeper thread
  void OnDelivered(const queue::PullSubscriber::Delivery& d, queue::MsgPtr msg);
  void DrainPushed();
  void DrainCancels();
  void OnPushed(queue::MsgPtr msg);
  void Plan();      // on the intake loop
  void PostPlan();  // from any other thread
  ModelPullState PullStateOf(const ServedModel& m, SteadyClock::time_point now) const;
  void Ask(ServedModel& m, const ModelPullState& st, int64_t want, SteadyClock::time_point now);
  std::chrono::milliseconds DoorbellExpiry(const ServedModel& m, SteadyClock::time_point now) const;
  void KeeperLoop();
  void Heartbeat();
  bool Wants(const ModelSpec& spec) const;

  WorkerOptions options_;
  WorkerMetrics metrics_;  // before anything that records into it
  EventLoop intake_;
  queue::ConnectionPtr pull_nc_;  // data: pulls, deliveries, results, acks; on intake_
  queue::ControlPlane control_;   // KV, streams, heartbeats
  queue::SubscriptionPtr push_sub_;    // shoal.push.<id>.>; on intake_ only
  queue::SubscriptionPtr cancel_sub_;  // shoal.cancel.<pool>; on intake_ only
  CancelledRequests cancelled_;
  std::atomic<uint64_t> pushed_items_{0};
  LocalQueue queue_;
  queue::MsgReaper reaper_;  // reaped by the keeper
  std::unique_ptr<queue::PayloadStore> payloads_;  // before runner_, which reads from it
  std::unique_ptr<BatchRunner> runner_;
  std::unique_ptr<queue::PullSubscriber> pull_;
  std::vector<std::unique_ptr<Executor>> executors_;

  std::mutex reconcile_mu_;  // one catalog reconciliation at a time
  mutable std::mutex models_mu_;
  // Installed models (loaded, or failed to load), by id and by pull slot.
  std::map<std::string, std::shared_ptr<ServedModel>, std::less<>> models_;  // guarded
  std::vector<std::shared_ptr<ServedModel>> by_slot_;           // guarded
  std::map<std::string, std::shared_ptr<const ModelSpec>> wanted_;  // guarded; what it serves
  std::set<std::string> loading_;                                   // guarded; queued or loading
  std::unique_ptr<Residency> residency_;                            // guarded

  std::mutex load_mu_;
  std::condition_variable load_cv_;
  std::deque<std::string> load_jobs_;  // guarded by load_mu_
  bool stop_loader_ = false;           // guarded by load_mu_
  std::thread loader_;
  std::unique_ptr<queue::WorkerRegistry> registry_;  // the other workers, for placement
  std::mutex heartbeat_mu_;                          // one heartbeat written at a time
  std::atomic<uint64_t> load_failures_{0};
  std::atomic<uint64_t> placement_rounds_{0};  // Place() calls that looked at the stream

  std::atomic<bool> draining_{false};
  std::atomic<bool> stop_keeper_{false};
  std::thread keeper_;
  std::unique_ptr<queue::CatalogWatch> catalog_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;  // reads everything above
  bool drained_ = false;
};

}  // namespace shoal::worker
