#include "worker/executor.h"

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
    std::vector<WorkItem> batch = queue_->TakeBatch();
    if (batch.empty()) return;  // closed and drained
    {
      std::lock_guard lock(mu_);
      running_ = &batch;
      last_progress_ = SteadyClock::now();
    }
    runner_->Run(batch);
    {
      std::lock_guard lock(mu_);
      running_ = nullptr;
    }
    runner_->Release(batch);
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
