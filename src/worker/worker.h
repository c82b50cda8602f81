// Worker: pulls work for the models it serves, batches it, runs it.
//
//   catalog watch ──▶ load model, ensure its consumer, add a pull slot
//   intake loop ────▶ LocalQueue ──▶ Executors ──▶ results + acks
//   keeper thread ──▶ pull credit top-up, +WPI for long waits, heartbeats
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
// What to pull is the PullPlanner's call (pull_planner.h): one predicted
// batch per free executor for the models that need it most, a one-message
// doorbell on the rest, nothing while every executor is busy — so work waits
// in the shared stream for the first free device. Plans are made when work
// arrives, a request ends, a batch finishes, and on the keeper's tick —
// always on the intake loop.
//
// Threading: catalog changes arrive on the catalog watch thread; deliveries
// on the intake loop; batches on executor threads; upkeep on the keeper
// thread. `models_mu_` guards the served-model maps.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/event_loop.h"
#include "queue/catalog.h"
#include "queue/control_plane.h"
#include "queue/nats.h"
#include "queue/pull_subscriber.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"
#include "worker/batch_runner.h"
#include "worker/cancelled_requests.h"
#include "worker/executor.h"
#include "worker/local_queue.h"
#include "worker/pull_planner.h"

namespace shoal::worker {

struct WorkerOptions {
  std::string nats_url;
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
};

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> Start(WorkerOptions options);
  ~Worker();

  // Stops pulling, finishes queued and running work within `timeout`, hands
  // back (nak) whatever is left, and leaves the worker registry.
  void Drain(std::chrono::milliseconds timeout);

  const std::string& id() const { return options_.id; }
  // Model ids this worker is pulling for.
  std::vector<std::string> ServedModels() const;
  // Batches this worker has run (started) so far, and the items in them.
  LocalQueue::Totals batch_totals() const { return queue_.totals(); }
  // Items waiting in the local queue now.
  size_t local_queue_size() const { return queue_.size(); }
  // Pull requests and probes sent to JetStream so far.
  uint64_t pull_requests_sent() const { return pull_->requests_sent(); }
  // Pushed items (push baseline) queued here so far.
  uint64_t pushed_items() const { return pushed_items_.load(std::memory_order_relaxed); }

 private:
  explicit Worker(WorkerOptions options);
  Status Init();
  void OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot);
  void Serve(const std::shared_ptr<const ModelSpec>& spec);
  void Retire(const std::string& id);
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
  EventLoop intake_;
  queue::ConnectionPtr pull_nc_;  // data: pulls, deliveries, results, acks; on intake_
  queue::ControlPlane control_;   // KV, streams, heartbeats
  queue::SubscriptionPtr push_sub_;    // shoal.push.<id>.>; on intake_ only
  queue::SubscriptionPtr cancel_sub_;  // shoal.cancel.<pool>; on intake_ only
  CancelledRequests cancelled_;
  std::atomic<uint64_t> pushed_items_{0};
  LocalQueue queue_;
  queue::MsgReaper reaper_;  // reaped by the keeper
  std::unique_ptr<BatchRunner> runner_;
  std::unique_ptr<queue::PullSubscriber> pull_;
  std::vector<std::unique_ptr<Executor>> executors_;

  std::mutex reconcile_mu_;  // one catalog reconciliation at a time
  mutable std::mutex models_mu_;
  std::map<std::string, std::shared_ptr<ServedModel>> models_;  // by id; guarded
  std::vector<std::shared_ptr<ServedModel>> by_slot_;           // guarded

  std::atomic<bool> draining_{false};
  std::atomic<bool> stop_keeper_{false};
  std::thread keeper_;
  std::unique_ptr<queue::Catalog> catalog_;
  bool drained_ = false;
};

}  // namespace shoal::worker
