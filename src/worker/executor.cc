#include "worker/executor.h"

#include <algorithm>

namespace shoal::worker {

Executor::Executor(LocalQueue* queue, BatchRunner* runner, std::function<void()> on_batch_done)
    : queue_(queue), runner_(runner), on_batch_done_(std::move(on_batch_done)) {
  thread_ = std::thread([this] { Loop(); });
}

Executor::~Executor() {
  if (thread_.joinable()) thread_.join();
}

void Executor::Loop() {
  for (;;) {
    bool closed_full = false;
    std::vector<WorkItem> batch = queue_->TakeBatch(&closed_full);
    if (batch.empty()) return;  // closed and drained
    const auto taken = SteadyClock::now();
    {
      std::lock_guard lock(mu_);
      running_ = &batch;
      last_progress_ = taken;
    }
    // What the batch did, for its model's batch controller. The batch is
    // sorted by cost, so the oldest item is not necessarily the first.
    BatchOutcome outcome;
    outcome.items = batch.size();
    outcome.closed_full = closed_full;
    auto oldest = batch.front().received;
    for (const WorkItem& it : batch) {
      outcome.cost += it.work.cost;
      oldest = std::min(oldest, it.received);
    }
    outcome.queue_wait = taken - oldest;
    ServedModel& model = *batch.front().model;  // the batch's items keep it alive
    runner_->Run(batch);
    outcome.done = SteadyClock::now();
    outcome.service = outcome.done - taken;
    {
      std::lock_guard lock(mu_);
      running_ = nullptr;
    }
    model.batching.Report(outcome);
    if (outcome.cost > 0) {
      const double per_cost = std::chrono::duration<double, std::nano>(outcome.service).count() / outcome.cost;
      const double mean = model.service_ns_per_cost.load(std::memory_order_relaxed);
      model.service_ns_per_cost.store(mean == 0 ? per_cost : 0.8 * mean + 0.2 * per_cost, std::memory_order_relaxed);
    }
    const bool interactive = std::any_of(batch.begin(), batch.end(), [](const WorkItem& it) {
      return it.priority == queue::Priority::kInteractive;
    });
    runner_->Release(batch);
    batch.clear();  // the items' tickets: no longer in flight
    queue_->BatchDone(interactive);
    if (on_batch_done_) on_batch_done_();
  }
}

void Executor::KeepAlive(SteadyClock::time_point now) {
  std::lock_guard lock(mu_);
  if (!running_ || running_->empty()) return;
  const auto half_ack_wait =
      std::chrono::milliseconds(running_->front().model->spec->queue.ack_wait_ms / 2);
  if (now - last_progress_ < half_ack_wait) return;
  for (const WorkItem& it : *running_) runner_->Progress(it);
  last_progress_ = now;
}

}  // namespace shoal::worker
