// Worker heartbeats: each worker rewrites its entry in the `shoal_workers` KV
// bucket every second; gateways (and later, placement) read the set of live
// workers from a watch on the bucket.
//
// nats-server 2.9 ages out a whole bucket's entries (no per-key TTL) and a
// watcher is not told when an entry ages out, so liveness is decided here: a
// worker is live while its last heartbeat arrived within `stale_after`.
//
// Unless the whole bucket fell silent: when no heartbeat at all has arrived
// for `stale_after`, the bucket is more likely stalled (its stream electing
// a leader after a server died, or this process cut off from it) than every
// worker dead at once, so workers are judged as of the last heartbeat heard,
// for up to `silence_grace` more, while the watch is started again (a
// partition can leave it broken: queue/kv_watch.h) — and for as long as
// starting it again fails: a registry that cannot see has no news of any
// worker's death either. Requests then wait in the work stream
// instead of failing NO_CAPACITY while a JetStream cluster recovers. The
// cost: when the only worker of the whole fleet dies without deleting its
// heartbeat, it counts as live for stale_after + silence_grace rather than
// stale_after (its items wait in the stream for a replacement or their
// deadline); any other worker's heartbeats keep the bucket from falling
// silent. A worker that stops cleanly deletes its heartbeat and is gone at
// once.
//
// Heartbeats are not the only sign of life: a worker whose results reach a
// gateway is alive whatever its bucket says (a cluster electing leaders may
// store no heartbeat for longer than the grace while work still flows), so
// the gateway tells the registry (Answered) and a known worker counts as
// heard then.
//
// Threading: updates arrive on the KvWatch thread; queries from any thread
// take `mu_`.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "queue/kv_watch.h"
#include "queue/nats.h"

namespace shoal::queue {

struct WorkerInfo {
  std::string id;
  std::string host;
  int pid = 0;
  std::string pool;
  // Models this worker serves: loaded, or loaded on demand (the gateway
  // queues requests for any of them).
  std::vector<std::string> models;
  // Residency (worker/residency_policy.h): the memory budget and what is
  // loaded, being loaded, failed to load (terminal for that spec), or keeps
  // being evicted and reloaded.
  uint64_t memory_budget = 0;
  uint64_t memory_used = 0;
  uint64_t memory_pinned = 0;
  std::vector<std::string> resident;
  std::vector<std::string> pinned;  // of `resident`
  std::vector<std::string> loading;
  std::vector<std::string> failed;
  std::vector<std::string> thrashing;
  uint64_t loads = 0;
  uint64_t evictions = 0;
  int executors = 0;
  uint64_t queued = 0;    // items in its machine-local queue
  uint64_t in_flight = 0; // items in running batches
  uint64_t batches = 0;      // batches run since the worker started
  uint64_t batch_items = 0;  // items in them (batch fill = items / batches)
  int64_t ts_ms = 0;      // when the heartbeat was written

  std::string ToJson() const;
  static Result<WorkerInfo> Parse(std::string_view json);
};

Status PutHeartbeat(kvStore* workers, const WorkerInfo& info);
// The heartbeats written within `fresh` of now, read once (no watch): for
// one-shot tools such as `shoal status`.
Result<std::vector<WorkerInfo>> ReadHeartbeats(kvStore* workers, std::chrono::milliseconds fresh);
Status DeleteHeartbeat(kvStore* workers, std::string_view worker_id);

inline constexpr auto kHeartbeatInterval = std::chrono::milliseconds(1000);

class WorkerRegistry {
 public:
  static Result<std::unique_ptr<WorkerRegistry>> Open(
      kvStore* workers, std::chrono::milliseconds stale_after = 4 * kHeartbeatInterval,
      std::chrono::milliseconds silence_grace = std::chrono::seconds(15));

  // Whether a worker last heard at `heard` is live at `now`, the latest
  // heartbeat of any worker having arrived at `latest` (see above).
  static bool IsLive(SteadyClock::time_point heard, SteadyClock::time_point latest, SteadyClock::time_point now,
                     std::chrono::milliseconds stale_after, std::chrono::milliseconds silence_grace,
                     bool blind = false);

  // Whether some live worker serves `model_id` (loaded or on demand).
  bool AnyServing(std::string_view model_id) const;
  // `worker_id` answered work at `at`: a known worker counts as heard then
  // (what it serves stays what its last heartbeat said); an unknown one —
  // never heard, or gone with its heartbeat deleted — is ignored.
  void Answered(std::string_view worker_id, SteadyClock::time_point at = SteadyClock::now());
  std::vector<WorkerInfo> Live() const;

 private:
  struct Seen {
    WorkerInfo info;
    SteadyClock::time_point at;
  };
  WorkerRegistry() = default;
  void Apply(const KvChange& change);
  bool IsLive(const Seen& s, SteadyClock::time_point now) const {
    return IsLive(s.at, latest_, now, stale_after_, silence_grace_, watch_->blind());
  }

  std::chrono::milliseconds stale_after_{};
  std::chrono::milliseconds silence_grace_{};
  mutable std::mutex mu_;
  std::map<std::string, Seen> workers_;  // guarded by mu_
  SteadyClock::time_point latest_{};     // the newest heartbeat's; guarded by mu_
  std::unique_ptr<KvWatch> watch_;       // last: stops first
};

}  // namespace shoal::queue
