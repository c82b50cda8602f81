#include "worker/local_queue.h"

#include <algorithm>

#include "worker/priority_line.h"

namespace shoal::worker {

void LocalQueue::Push(WorkItem item) {
  {
    std::lock_guard lock(mu_);
    std::deque<WorkItem>& q = by_model_[item.model.get()];
    const auto at = PlaceInLine(q, item.priority, /*head=*/false, [](const WorkItem& w) { return w.priority; });
    q.insert(at, std::move(item));
    ++count_;
  }
  cv_.notify_one();
}

uint64_t LocalQueue::BatchSliceCost(const ServedModel& model) {
  const double ns_per_cost = model.service_ns_per_cost.load(std::memory_order_relaxed);
  if (ns_per_cost <= 0) return UINT64_MAX;  // not measured yet: the first batch measures it
  return static_cast<uint64_t>(std::chrono::duration<double, std::nano>(kBatchSlice).count() / ns_per_cost);
}

size_t LocalQueue::BatchSize(const std::deque<WorkItem>& items, bool* full) {
  ServedModel& model = *items.front().model;
  const BatchingSpec& limits = model.spec->batching;
  uint64_t cost_cap = model.batching.CostCap();
  if (items.front().priority == queue::Priority::kBatch) {  // then all are: interactive items come first
    cost_cap = std::min(cost_cap, BatchSliceCost(model));
  }
  size_t n = 0;
  uint64_t tokens = 0;
  *full = false;
  for (const WorkItem& it : items) {
    if (n == limits.max_batch_requests || (n > 0 && tokens + it.work.cost > cost_cap)) {
      *full = true;
      break;
    }
    tokens += it.work.cost;
    ++n;
  }
  // Exactly at the count is full too: waiting cannot add to it.
  if (n == limits.max_batch_requests) *full = true;
  return n;
}

std::vector<WorkItem> LocalQueue::TakeBatch(bool* closed_full) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (EmptyLocked()) {
      if (closed_) return {};
      ++waiting_;
      cv_.wait(lock);
      --waiting_;
      continue;
    }
    // Models with interactive items first, then in the order their oldest
    // items arrived; the first whose batch is ready (full, or its wait is
    // over) runs. A model still waiting for its batch to fill does not hold
    // up another model's ready batch.
    std::vector<std::deque<WorkItem>*> order;
    for (auto& [model, q] : by_model_) {
      if (!q.empty()) order.push_back(&q);
    }
    std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
      const WorkItem &x = a->front(), &y = b->front();
      if (x.priority != y.priority) return x.priority == queue::Priority::kInteractive;
      return x.received < y.received;
    });
    const auto now = SteadyClock::now();
    auto wake = SteadyClock::time_point::max();
    std::deque<WorkItem>* items = nullptr;
    size_t n = 0;
    bool full = false;
    for (std::deque<WorkItem>* q : order) {
      // Batch-class work waits while interactive work runs (see the header).
      if (q->front().priority == queue::Priority::kBatch && running_interactive_ > 0 && !closed_) continue;
      n = BatchSize(*q, &full);
      if (full || closed_) {
        items = q;
        break;
      }
      const auto oldest = q->front().received;
      ServedModel& model = *q->front().model;
      const bool arriving = static_cast<int64_t>(q->size()) < model.fill_items.load(std::memory_order_relaxed);
      const auto filling = arriving ? SteadyClock::time_point(SteadyClock::duration(
                                          model.fill_until_ns.load(std::memory_order_relaxed)))
                                    : SteadyClock::time_point{};
      const auto until = std::max(oldest + model.batching.Wait(oldest), filling);
      if (now >= until) {
        items = q;
        break;
      }
      wake = std::min(wake, until);
    }
    if (!items) {
      ++waiting_;
      cv_.wait_until(lock, wake);
      --waiting_;
      continue;  // re-evaluate: more items, another model, or time is up
    }

    const bool interactive = items->front().priority == queue::Priority::kInteractive;
    std::vector<WorkItem> batch;
    batch.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(items->front()));
      items->pop_front();
    }
    // Longest first (see the header); stable, so equal costs keep arrival order.
    std::stable_sort(batch.begin(), batch.end(),
                     [](const WorkItem& a, const WorkItem& b) { return a.work.cost > b.work.cost; });
    if (closed_full) *closed_full = full;
    count_ -= n;
    ++running_;
    if (interactive) ++running_interactive_;
    totals_.most_running = std::max(totals_.most_running, running_);
    ++totals_.batches;
    totals_.items += n;
    for (WorkItem& it : batch) it.ticket.Start();
    auto* model = batch.front().model.get();
    model->last_batch_ns.store(now.time_since_epoch().count(), std::memory_order_relaxed);
    model->items_run.fetch_add(n, std::memory_order_relaxed);
    if (items->empty()) by_model_.erase(model);
    if (!EmptyLocked()) cv_.notify_one();  // another executor may start the rest
    return batch;
  }
}

void LocalQueue::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

std::vector<WorkItem> LocalQueue::TakeAll() {
  std::lock_guard lock(mu_);
  std::vector<WorkItem> out;
  for (auto& [model, q] : by_model_) {
    for (auto& it : q) out.push_back(std::move(it));
  }
  by_model_.clear();
  count_ = 0;
  return out;
}

std::vector<WorkItem> LocalQueue::TakeAllFor(const ServedModel* model) {
  std::lock_guard lock(mu_);
  std::vector<WorkItem> out;
  auto found = by_model_.find(model);
  if (found == by_model_.end()) return out;
  for (auto& it : found->second) out.push_back(std::move(it));
  count_ -= found->second.size();
  by_model_.erase(found);
  return out;
}

void LocalQueue::ForEach(const std::function<void(WorkItem&)>& fn) {
  std::lock_guard lock(mu_);
  for (auto& [model, q] : by_model_) {
    for (auto& it : q) fn(it);
  }
}

LocalQueue::Totals LocalQueue::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

int LocalQueue::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

int LocalQueue::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

void LocalQueue::BatchDone(bool interactive) {
  {
    std::lock_guard lock(mu_);
    --running_;
    if (interactive) --running_interactive_;
  }
  cv_.notify_all();  // batch-class work may start now
}

size_t LocalQueue::size() const {
  std::lock_guard lock(mu_);
  return count_;
}

}  // namespace shoal::worker
