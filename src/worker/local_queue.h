// LocalQueue: the machine-local queue of one worker process. The pull
// subscriber pushes delivered work in; executors (one per device) take
// batches out. Items that one executor cannot start stay here for another,
// with no network hop.
//
// Batching (the cost-bounded batcher): an executor looks at the models in
// the order their oldest items arrived (those with interactive items before
// those with batch-class work alone: queue/priority.h) and takes the first
// whose batch is ready — its items in arrival order, interactive ones
// first, while they fit the profile's
// max_batch_requests and the model's cost cap (max_batch_tokens, or less
// where the adaptive controller has lowered it: batch_controller.h; the
// first item always fits, so an oversize item runs alone), ready when that
// fills the batch or when the
// oldest item has waited the model's current batch wait
// (ServedModel::batching: the profile's fixed max_batch_wait_ms, or what
// the adaptive controller says now). A model still waiting for its batch to
// fill does not hold up another model's ready batch; with none ready, the
// executor sleeps until the first wait ends or more work arrives.
//
// Batch-class work (queue/priority.h) runs in slices: only while no batch
// with interactive work runs here, and at most kBatchSlice of predicted
// service time a batch (the model's measured time per unit of cost; one
// item at least), so interactive work that arrives waits for an executor at
// most about that long, and does not share the cores with batch work.
//
// The batch goes out sorted by cost, longest first: the runtimes split a
// batch's work across threads, and starting the longest items first balances
// them (longest-processing-time-first), and neighbours of similar length pad
// less wherever a runtime groups them.
//
// Threading: all methods are thread-safe; `mu_` guards everything. TakeBatch
// asks the model's BatchController under `mu_` (it takes its own lock
// after ours, never the other way round).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "worker/work_item.h"

namespace shoal::worker {

class LocalQueue {
 public:
  static constexpr std::chrono::milliseconds kBatchSlice{10};

  // The cost a batch-class batch of `model` may hold: kBatchSlice of its
  // measured service time (UINT64_MAX before it has one).
  static uint64_t BatchSliceCost(const ServedModel& model);

  void Push(WorkItem item);

  // Blocks until a batch is ready. Returns an empty batch once the queue is
  // closed and empty. `closed_full` (optional) says whether the batch closed
  // on count or cost budget rather than on the wait (or on Close).
  std::vector<WorkItem> TakeBatch(bool* closed_full = nullptr);

  // Wakes all takers; TakeBatch hands out what is left without waiting, then
  // returns empty.
  void Close();

  // Removes every waiting item (for shutdown, or a model that left).
  std::vector<WorkItem> TakeAll();
  std::vector<WorkItem> TakeAllFor(const ServedModel* model);

  // Calls `fn` on every waiting item, under the lock (keep it short).
  void ForEach(const std::function<void(WorkItem&)>& fn);

  size_t size() const;

  // Batches handed out and not yet reported done (BatchDone, by the
  // executor that ran it, saying whether it held interactive work):
  // executors busy now.
  int running() const;
  void BatchDone(bool interactive = true);

  // TakeBatch calls blocked now, for work to arrive or a batch to fill.
  int waiting() const;

  // Batches handed out since the start, the items in them, and the most
  // that ran at once.
  struct Totals {
    uint64_t batches = 0;
    uint64_t items = 0;
    int most_running = 0;
  };
  Totals totals() const;

 private:
  bool EmptyLocked() const { return count_ == 0; }
  // How many of `items` (one model's, oldest first) the next batch takes,
  // and whether that fills it (by count or cost budget).
  // A batch-class batch's size is further capped by the slice.
  static size_t BatchSize(const std::deque<WorkItem>& items, bool* full);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<const ServedModel*, std::deque<WorkItem>> by_model_;  // guarded by mu_
  size_t count_ = 0;                                              // guarded by mu_
  int running_ = 0;                                               // guarded by mu_
  int running_interactive_ = 0;  // of running_, batches with interactive work; guarded by mu_
  int waiting_ = 0;                                               // guarded by mu_
  Totals totals_;                                                 // guarded by mu_
  bool closed_ = false;                                           // guarded by mu_
};

}  // namespace shoal::worker
