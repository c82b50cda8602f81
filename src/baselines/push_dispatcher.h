// PushDispatcher: the push-router baseline, for comparison only. It does what
// vLLM's and SGLang's routers do — the gateway assigns each request to one
// worker — so the benchmark can measure Shoal's pull design against it. It is
// not how Shoal serves: `shoal gateway --dispatch pull` (the default) is.
// Its workers take pushed items through a PushIntake (push_intake.h).
//
//   Submit ──▶ pick one live worker serving the model from a view of the
//              worker registry refreshed every `view_refresh` (routers poll
//              their workers; they do not see every heartbeat)
//              push-rr  round-robin over the model's workers in the view
//              push-lo  least outstanding: items this lane sent to the worker
//                       and has no result for yet (what SGLang's router counts)
//          ──▶ none? wait up to no_capacity_wait (as the pull path), then
//              503 NO_CAPACITY
//          ──▶ one core-NATS publish per item to
//              shoal.push.<worker-token>.<model-token> (queue/subjects.h);
//              results come back to the lane's inbox exactly as on the pull
//              path (gateway/lane_channel.h); deadlines are the lane
//              sweeper's.
//
// What it deliberately lacks, because the routers it stands for lack it:
// no durability — a worker that dies (or leaves) loses the items pushed to it
// and their clients get DEADLINE_EXCEEDED; no redelivery, no retries on
// another worker; no JetStream; no batching across workers — each worker
// batches only what was pushed to it. Its view can be up to `view_refresh`
// plus the registry's staleness behind the fleet.
//
// Threading: one per lane; everything but Start and MaxPayload runs on the
// lane's loop thread (Submit, Tick, results, Stop). The registry is read
// under its own lock at refresh.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/event_loop.h"
#include "gateway/capacity_wait.h"
#include "gateway/dispatcher.h"
#include "gateway/lane_channel.h"
#include "queue/worker_registry.h"

namespace shoal::baselines {

using gateway::PendingRequest;

enum class PushPolicy { kRoundRobin, kLeastOutstanding };

struct PushDispatcherOptions {
  PushPolicy policy = PushPolicy::kRoundRobin;
  std::chrono::milliseconds view_refresh{1000};
};

class PushDispatcher final : public gateway::Dispatcher {
 public:
  PushDispatcher(const gateway::LaneSetup& lane, PushDispatcherOptions options = {});
  ~PushDispatcher() override;

  // Connects (from any thread), subscribes the lane's inbox, takes a first
  // view of the workers.
  Status Start(const queue::ConnectOptions& nats);
  int64_t MaxPayload() const override;

  void Submit(const std::shared_ptr<PendingRequest>& p) override;
  void Cancel(const PendingRequest& p) override;
  void Tick(SteadyClock::time_point now) override;
  bool HasCapacity(std::string_view model_id) const override;
  void Stop() override;

 private:
  // A request pushed to a worker, until it is finished.
  struct Assigned {
    std::string worker_id;
    size_t outstanding = 0;  // its items without a result yet
  };

  void RefreshView();
  // The worker to push a request for `model_id` to; empty when none.
  std::string Pick(const std::string& model_id);
  void Push(PendingRequest& p, const std::string& worker_id);
  void OnApplied(PendingRequest& p);
  void Release(std::unordered_map<uint64_t, Assigned>::iterator it);

  const queue::WorkerRegistry* workers_;
  gateway::PendingTable* table_;
  const PushDispatcherOptions options_;
  gateway::LaneChannel channel_;
  // model id → ids of live workers serving it, sorted; refreshed periodically.
  std::map<std::string, std::vector<std::string>, std::less<>> view_;
  SteadyClock::time_point next_refresh_{};
  std::unordered_map<std::string, size_t> next_rr_;         // by model id
  std::unordered_map<std::string, int64_t> outstanding_;    // by worker id
  std::unordered_map<uint64_t, Assigned> assigned_;         // by request seq
  gateway::CapacityWait waiting_;  // requests waiting for a worker to appear
};

}  // namespace shoal::baselines
