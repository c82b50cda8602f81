// QueueDispatcher: one per gateway lane. Puts a request's items on JetStream
// and collects their results, over its own NATS connection driven by the
// lane's loop (a LaneChannel, lane_channel.h) — so a request is parsed,
// published, answered and written back on one thread.
//
//   Submit ──▶ (no live worker pulls for the model? wait up to
//              no_capacity_wait, then 503 NO_CAPACITY — nothing is queued
//              that nobody can run)
//          ──▶ one publish per item to shoal.work.<pool>.<model-token>,
//              reply <inbox>.ack for JetStream's publish acknowledgement
//   _INBOX.<lane-id>.> ──▶ results by item index; publish-ack errors
//              (stream full → 503 OVERLOADED; no stream → 503 NO_CAPACITY)
//
// A second result for a filled slot (a redelivery after a worker died
// between publishing and acking) is ignored. Items too large for a message
// go to the payload store first (payload_offloader.h), then the request
// continues as above.
//
// Accepted work is not lost to a dying nats-server. An item is published
// again when
//   - JetStream has not acknowledged storing it within 1 s: a publish to a
//     server that died, or to a stream between leaders, is dropped without
//     an answer;
//   - the connection reconnected and it has no result yet: a result
//     published while this lane was cut off is gone (core NATS delivers at
//     most once).
// The duplicates this may make are harmless — a second result for a slot is
// ignored — and happen only around a failure. Generation requests are not
// republished: their chunks carry state a second run would repeat.
//
// Nor does accepted work wait out an election. When an item of a pool has
// gone unstored for `hedge_after` (500 ms; a stored publish is acknowledged
// in milliseconds), that pool's work stream is taken to be between leaders
// (its leader's server died: 4–9 s in nats-server 2.9), and
// every unanswered interactive item of the pool (generations excepted, as
// above) is hedged: sent once more,
// over core NATS, to a live worker that has its model loaded
// (queue/subjects.h HedgeSubject), while the stream keeps — or, published
// again each second, gets — the durable copy. The first result answers; a
// request answered so is announced cancelled to the pool, so the stream's
// copies, delivered after the election, are dropped unrun
// (worker/cancelled_requests.h). A hedged copy its worker cannot run is
// dropped there: the stream's copy runs instead.
//
// Nor does it wait out a consumer that delivers nothing. When an item was
// stored `hedge_after` ago and this lane has had no result for its model
// since, the model's consumer may be between leaders (after a partition
// heals, nats-server 2.9 re-elects for 10 s and more) — or every worker is
// busy. The item is hedged as a copy for idle hands: a worker runs it only
// when the stream has delivered none of the model's work for 250 ms and no
// other of it runs or waits there (worker/intake.h), so a backlog is not
// run twice (at worst an item a worker took from the stream just as its
// copy came: a wasted run, not a second answer). Such a copy may find no
// idle hands where it went, so an item gets up to three, `hedge_after`
// apart, each to the next worker.
//
// Threading: everything but Start and MaxPayload runs on the lane's loop
// thread; Start makes the subscription there.
#pragma once

#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/event_loop.h"
#include "gateway/capacity_wait.h"
#include "gateway/dispatcher.h"
#include "gateway/lane_channel.h"
#include "gateway/payload_offloader.h"
#include "queue/nats.h"
#include "queue/worker_registry.h"

namespace shoal::gateway {

class QueueDispatcher final : public Dispatcher {
 public:
  // `offloader` (optional: without it, every item must fit a message)
  // outlives this.
  QueueDispatcher(const LaneSetup& lane, PayloadOffloader* offloader = nullptr);
  ~QueueDispatcher() override;

  // Connects (from any thread) and subscribes the lane's inbox.
  Status Start(const queue::ConnectOptions& nats);
  // Largest message the connection's server accepts.
  int64_t MaxPayload() const override;
  bool HasPriorityClasses() const override { return true; }

  void Submit(const std::shared_ptr<PendingRequest>& p) override;
  void Cancel(const PendingRequest& p) override;
  void Tick(SteadyClock::time_point now) override;
  bool HasCapacity(std::string_view model_id) const override;
  void Stop() override;

 private:
  // Submit, once every item fits a message.
  void Queue(const std::shared_ptr<PendingRequest>& p);
  void Publish(PendingRequest& p);
  // Publishes again the items of published requests that lack a result and
  // either were not stored for 1 s or (`reconnected`) may have lost it.
  void Republish(const std::vector<std::shared_ptr<PendingRequest>>& all, SteadyClock::time_point now,
                 bool reconnected);
  // Finds pools whose stream stores nothing (above) and hedges what waits.
  void Hedge(const std::vector<std::shared_ptr<PendingRequest>>& all, SteadyClock::time_point now);
  // Sends copies of `p`'s unanswered items to a worker: of those not
  // hedged yet if its pool is stalled; of those stored but undelivered
  // (above), for idle hands.
  void HedgeItems(PendingRequest& p, SteadyClock::time_point now);
  // Sends copies of `items` of `p` to the next worker (HedgeTarget).
  void SendCopies(PendingRequest& p, const std::vector<size_t>& items, bool if_idle, SteadyClock::time_point now);
  // A live worker of `spec`'s pool with it loaded, in turn; empty if none.
  std::string HedgeTarget(const ModelSpec& spec, SteadyClock::time_point now);
  void OnPublishAck(PendingRequest& p, size_t item, const queue::Message& msg);
  // A result from `worker` arrived: the registry hears of it (a sign of
  // life when heartbeats cannot be stored), at most every 250 ms a worker.
  void NoteAnswered(std::string_view worker, SteadyClock::time_point now);

  EventLoop* loop_;
  PayloadOffloader* offloader_;
  queue::WorkerRegistry* workers_;
  PendingTable* table_;
  LaneChannel channel_;  // connection, publishes, result inbox
  CapacityWait waiting_;  // requests waiting for a worker to appear
  uint64_t reconnects_seen_ = 0;
  SteadyClock::time_point next_republish_check_{};
  // Pools an item of which went unstored for hedge_after_, until one of
  // their publishes is stored again; the gateway's, shared by its lanes
  // (null: no hedging).
  const std::chrono::milliseconds hedge_after_;
  StalledPools* stalled_pools_;
  Counter* hedged_items_;
  std::vector<queue::WorkerInfo> live_;  // the registry's, as of live_at_
  SteadyClock::time_point live_at_{};
  size_t next_hedge_target_ = 0;
  // When this lane last had a result for each model (hedging's only).
  std::unordered_map<std::string, SteadyClock::time_point> last_answer_;
  // When this lane last told the registry of an answer from each worker
  // (at most every 250 ms each: its lock is shared by every lane). Looked
  // up by the reply's string_view: no allocation per result.
  struct TransparentHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, SteadyClock::time_point, TransparentHash, std::equal_to<>> told_answered_;
  uint64_t hedged_since_log_ = 0;
  uint64_t idle_copies_since_log_ = 0;
  SteadyClock::time_point next_hedge_log_{};
  uint64_t rejected_since_log_ = 0;
  SteadyClock::time_point next_reject_log_{};
};

}  // namespace shoal::gateway
