// StreamRelay: generation for a model whose runtime schedules its own
// sequences (runtime/streaming_generator.h: llama.cpp, a runtime process
// that generates). The runtime batches; the relay keeps the serving
// plane's part:
//
//   Push ──parse, check──▶ StreamingGenerator::Start ──updates──▶ chunks to the reply subject
//
// Each update becomes a chunk (wire/generate.h) with the next "seq"; the
// final one carries the finish reason, usage and timing, and the message
// is acked. A failed job is settled by its code (ack_policy.h): INVALID_INPUT
// → 400 and +TERM; NO_CAPACITY (its runtime process died) → -NAK, so the
// request is redelivered and regenerated from the same seed; anything else
// → INFERENCE_ERROR. A sweep thread, every 50 ms, cancels jobs whose
// deadline passed or whose client went away, and sends +WPI every half
// AckWait so JetStream does not redeliver a long generation.
//
// Threading: Push/FreeSlots/Stop/stats from any thread; updates arrive on
// the runtime's threads. `mu_` guards the job table and counters; each
// job's own mutex orders its updates against the sweep's +WPI and cancel.
// Stop cancels every job and waits for their final updates (a runtime ends
// cancelled jobs at once; a dead one's end as its connection breaks).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "queue/nats.h"
#include "runtime/streaming_generator.h"
#include "worker/batch_runner.h"
#include "worker/cancelled_requests.h"
#include "worker/sequence_engine.h"
#include "worker/served_model.h"

namespace shoal::worker {

class StreamRelay : public SequenceEngine {
 public:
  // `model` owns `generator`; both outlive the relay. `on_free` runs when
  // jobs end (pull credit to ask for), on the runtime's thread.
  StreamRelay(ServedModel* model, StreamingGenerator* generator, natsConnection* nc, queue::MsgReaper* reaper,
              BatchRunner* runner, const CancelledRequests* cancelled, std::string worker_id,
              std::function<void()> on_free);
  ~StreamRelay() override;  // Stop(kShuttingDown)

  void Push(WorkItem item) override;
  int64_t FreeSlots() const override;
  void Stop(Outcome outcome = Outcome::kShuttingDown) override;
  Stats stats() const override;

 private:
  struct Job;
  void OnUpdate(const std::shared_ptr<Job>& job, GenerationUpdate&& u);
  void Publish(Job& job, GenerationUpdate& u);
  void End(const std::shared_ptr<Job>& job, Outcome outcome, const Status& error);
  void SweepLoop();

  ServedModel* model_;
  StreamingGenerator* gen_;
  natsConnection* nc_;
  queue::MsgReaper* reaper_;
  BatchRunner* runner_;
  const CancelledRequests* cancelled_;
  const std::string worker_id_;
  const std::function<void()> on_free_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, std::shared_ptr<Job>> jobs_;  // under way, by a number of ours; guarded by mu_
  uint64_t next_ = 1;                              // guarded by mu_
  bool stopping_ = false;                          // guarded by mu_
  Outcome stop_outcome_ = Outcome::kShuttingDown;  // guarded by mu_
  Stats stats_;                                    // guarded by mu_
  std::thread sweeper_;
};

}  // namespace shoal::worker
