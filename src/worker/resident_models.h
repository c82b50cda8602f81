// ResidentModels: the worker's residency part — which catalog models it
// serves, which are loaded, loading them on demand, evicting, placement.
//
//   catalog watch ─▶ OnCatalog: what it may serve; pinned ones queued to load
//   control tick ──▶ Place(): the stream's per-model counts + the workers'
//                    heartbeats → placement.h → load / release jobs
//   loader thread ─▶ one job at a time: plan room (residency_policy.h),
//                    evict, load, install the model and its pull slot
//
// A worker serves every catalog model of its pool whose runtime it has —
// its heartbeat lists them, so gateways queue requests for them — but only
// pinned ones load at start; the others load when work for them waits in
// the stream and placement picks this worker, and are evicted under memory
// pressure or when an extra replica goes cold.
//
// A model whose load fails is installed failed: its pull slot answers every
// request MODEL_LOAD_FAILED (502) and acks it, so requests end at once
// instead of circling, and placement counts this worker as its holder so no
// other worker tries the same files. A new spec for it (re-registration)
// clears the failure.
//
// LoRA adapters are part of a base model's spec, but a change to them alone
// (an adapter registered or removed) does not reload the base: the loaded
// model is handed the new list (Model::UpdateLoras), right after a load and
// on every such catalog change.
//
// Threading: `mu_` guards what it serves, what is loading and the
// residency accounting; it is taken before ServedModels' own lock, never
// after. Only the loader thread loads and installs, one model at a time, so
// two plans for room never overlap; unloads come from the loader
// (evictions), the catalog watch (a model changed or left) and the control
// thread (a cold replica), each one step under `mu_`. `reconcile_mu_` keeps catalog
// changes (and the adapter lists they hand models) in catalog order.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/job_queue.h"
#include "queue/catalog_watch.h"
#include "queue/nats.h"
#include "queue/worker_registry.h"
#include "runtime/registry/registry.h"
#include "worker/batch_runner.h"
#include "worker/cancelled_requests.h"
#include "worker/intake.h"
#include "worker/local_queue.h"
#include "worker/model_files.h"
#include "worker/residency_policy.h"
#include "worker/served_models.h"
#include "worker/worker_metrics.h"

namespace shoal::worker {

// What a worker holds, for tests and `shoal status` (heartbeats carry it).
struct ResidencyView {
  uint64_t budget = 0, used = 0;
  std::vector<std::string> resident, loading, failed;
  Residency::Counters counters;
  uint64_t load_failures = 0;
  // Placement decisions made so far (one per control tick that could read the
  // stream): what "placement has looked" means to a caller.
  uint64_t placement_rounds = 0;
};

// Half this machine's physical memory.
uint64_t DefaultMemoryBudget();

class ResidentModels {
 public:
  struct Options {
    std::string worker_id;
    std::string pool;
    std::vector<std::string> models;  // serve only these (empty: every model of the pool)
    uint64_t memory_budget = 0;       // 0: DefaultMemoryBudget()
    EvictionPolicyKind eviction = EvictionPolicyKind::kCostAware;
    size_t max_models = 0;
    int threads_per_batch = 1;  // cores one batch may use, unless a profile says
  };
  // The worker's parts it uses; they outlive it.
  struct Parts {
    ServedModels* served;
    Intake* intake;  // pull slots, plans, the connection engines publish on
    LocalQueue* queue;
    BatchRunner* runner;
    CancelledRequests* cancelled;
    queue::MsgReaper* reaper;
    WorkerMetrics* metrics;
    jsCtx* js;                               // consumers; the stream's per-model counts
    const queue::WorkerRegistry* registry;  // the other workers, for placement
    ModelRuntimes* runtimes;                 // where each model loads (in this process or a runtime process)
    ModelFiles* files;                       // where its files are (a path, or the model cache)
    std::function<void()> changed;           // what it serves or holds changed (a heartbeat)
  };

  // Starts the loader thread.
  ResidentModels(Options options, Parts parts);
  ~ResidentModels();  // Stop()

  // The catalog changed (on the watch thread; also once at start).
  void OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot);
  // Decides what to load or let go (the control thread's, every 100 ms).
  void Place();
  // Loads no more (one under way finishes first); generations still running
  // go back to the stream.
  void Stop();

  // Model ids it serves (loaded or on demand).
  std::vector<std::string> Wanted() const;
  ResidencyView View() const;
  // Its part of a heartbeat: models, memory, loads.
  void Describe(queue::WorkerInfo* info) const;
  uint64_t memory_budget() const { return options_.memory_budget; }

 private:
  bool Wants(const ModelSpec& spec) const;
  void QueueLoad(const std::string& id);
  void Load(const std::string& id);  // on the loader thread
  // The draft model of a speculative generator (its profile's
  // speculative.draft, from the catalog), checked against `target`; null
  // when it speculates without one (prompt lookup) or not at all.
  Result<std::unique_ptr<Model>> LoadDraft(const ModelSpec& spec, Model& target, const LoadContext& ctx,
                                           FileLeases* files);
  void Install(const std::shared_ptr<const ModelSpec>& spec, std::unique_ptr<Model> model,
               std::unique_ptr<Model> draft, Status load_error, SteadyClock::duration load_time, FileLeases files);
  void Unload(const std::string& id, std::string_view why);
  int ThreadsFor(const ModelSpec& spec) const;

  Options options_;
  const Parts parts_;
  std::atomic<bool> stopped_{false};

  std::mutex reconcile_mu_;  // one catalog reconciliation at a time
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ModelSpec>> wanted_;  // guarded; what it serves
  std::shared_ptr<const queue::CatalogSnapshot> catalog_;           // guarded; all of it (draft models)
  std::set<std::string> loading_;                                   // guarded; queued or loading
  Residency residency_;                                             // guarded
  std::atomic<uint64_t> load_failures_{0};
  std::atomic<uint64_t> placement_rounds_{0};  // Place() calls that looked at the stream

  JobQueue<std::string> loads_;  // model ids to load, for the loader thread
  std::thread loader_;
};

}  // namespace shoal::worker
