// Executor: one device's worth of execution — a thread that takes batches
// from the machine-local queue and runs them. A worker owns one per device
// (on the CPU, `--executors N`).
//
// Threading: the executor thread runs batches; the worker's keeper thread
// calls KeepAlive() to send +WPI for a batch running longer than half its
// AckWait. `mu_` guards `running_`, which points at the batch on the executor
// thread's stack only while the model runs. After each batch the executor
// thread reports its outcome (size, closed full or by the wait, queue wait of
// the oldest item, service time around BatchRunner::Run) to the model's
// BatchController, which has its own lock.
#pragma once

#include <mutex>
#include <thread>
#include <vector>

#include "worker/batch_runner.h"
#include "worker/local_queue.h"

namespace shoal::worker {

class Executor {
 public:
  // `on_batch_done` runs on the executor thread after each batch (the worker
  // uses it to refill pull credit).
  Executor(LocalQueue* queue, BatchRunner* runner, std::function<void()> on_batch_done);
  ~Executor();  // joins; close the queue first

  void KeepAlive(SteadyClock::time_point now);

 private:
  void Loop();

  LocalQueue* queue_;
  BatchRunner* runner_;
  std::function<void()> on_batch_done_;
  std::mutex mu_;
  std::vector<WorkItem>* running_ = nullptr;  // guarded by mu_
  SteadyClock::time_point last_progress_{};   // guarded by mu_
  std::thread thread_;
};

}  // namespace shoal::worker
