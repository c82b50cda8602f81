// A model this worker pulls for: its spec, the loaded Model, its pull slot,
// live counters the pull planner reads, and the controller that sets its
// batch wait and cost cap (or, for a generator, its generation engine).
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model_spec.h"
#include "runtime/runtime.h"
#include "worker/batch_controller.h"
#include "worker/model_files.h"
#include "worker/worker_metrics.h"

namespace shoal::worker {

class SequenceEngine;  // sequence_engine.h

// The LoRA adapters a loaded model accepted (Model::UpdateLoras), by name.
// An item naming one that is not here is never handed to the model: the
// catalog reaches gateways and workers in no fixed order, so it goes back to
// the stream for a moment first, and then fails MODEL_NOT_FOUND
// (batch_runner.cc). Threading: any thread; `mu_` guards the names.
class LoraNames {
 public:
  void Set(std::span<const LoraSpec> loras) {
    std::vector<std::string> names;
    for (const LoraSpec& l : loras) names.push_back(l.name);
    std::lock_guard lock(mu_);
    names_ = std::move(names);
  }
  bool Contains(std::string_view name) const {
    std::lock_guard lock(mu_);
    return std::find(names_.begin(), names_.end(), name) != names_.end();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> names_;  // guarded by mu_
};

struct ServedModel {
  // As loaded. A catalog change to its `loras` alone does not replace it
  // (nor reload the model): the model gets the new list (UpdateLoras) and
  // `loras` below follows.
  std::shared_ptr<const ModelSpec> spec;
  std::unique_ptr<Model> model;  // Encode may run on several executors at once
  // A generator's speculative draft model (spec->speculative.draft), loaded
  // with it and used by its engine alone; null: none.
  std::unique_ptr<Model> draft;
  LoraNames loras;
  // The list last handed to UpdateLoras (ok or not), to tell a change of
  // `loras` in the catalog; guarded by ResidentModels' lock.
  std::vector<LoraSpec> loras_given;
  // The model cache's entries its files (and its adapters' and draft's) are
  // read from (model_files.h); kept while it is loaded.
  FileLeases files;
  // Set, and `model` null, when it failed to load: its items are answered
  // with this (MODEL_LOAD_FAILED) and acked.
  Status load_error;
  int64_t loaded_unix_us = 0;  // when it was installed: items queued before it waited for the load
  SteadyClock::time_point installed_at{};  // for its minimum residence (worker_residency.cc)
  SteadyClock::duration load_time{};
  // PullSubscriber slots, one per priority class (queue/priority.h).
  int slot = -1;        // interactive
  int batch_slot = -1;  // batch
  std::atomic<int64_t> queued{0};        // items in the local queue (or an engine's line)
  std::atomic<int64_t> batch_queued{0};  // of which batch-class
  std::atomic<int64_t> in_flight{0};  // items in running batches
  std::atomic<bool> retired{false};   // left the catalog: pull no more
  // For the pull planner: mean item cost (EWMA over arrivals; written on the
  // intake thread), when the last item arrived here (doorbell expiries),
  // when this worker last started a batch of it, and until when (or until
  // how many items are here) a batch should wait for items asked for and
  // known to be in the stream (LocalQueue::TakeBatch). Times are
  // steady-clock ns.
  std::atomic<double> mean_item_cost{0};
  std::atomic<int64_t> last_delivery_ns{0};
  std::atomic<int64_t> last_batch_ns{0};
  int64_t last_copy_ns = 0;  // a gateway's copy for idle hands last taken (Intake::TakesIdleCopy; the loop's)
  std::atomic<uint64_t> items_run{0};  // in batches started here (LocalQueue::TakeBatch)
  uint64_t items_reported = 0;         // to the eviction policy; control thread only
  std::atomic<int64_t> fill_until_ns{0};
  std::atomic<int64_t> fill_items{0};
  // Service time per unit of cost (EWMA over its batches; 0 until one ran):
  // what sizes a slice of batch-class work (LocalQueue::kBatchSlice).
  std::atomic<double> service_ns_per_cost{0};
  // The batch wait and cost cap: LocalQueue asks it, executors report to it
  // (it has its own lock). Configure it from `spec->batching` when served.
  BatchController batching;
  // Its series in the worker's metrics (worker_metrics.h); null in tests
  // that run a BatchRunner alone.
  const ModelSeries* metrics = nullptr;
  // For a generative model: its continuous batch (a GenerationEngine, or a
  // StreamRelay to a runtime that batches itself), which takes its items
  // instead of the LocalQueue and executors. Set at install.
  std::shared_ptr<SequenceEngine> engine;
};

}  // namespace shoal::worker
