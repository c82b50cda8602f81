// BatchController: decides, per model, how long a partial batch waits for
// more items before it runs (the "batch wait"), and the cost a batch may
// hold (the "cost cap", at most the profile's max_batch_tokens). One lives
// in each ServedModel.
//
// Off (no `batching.adaptive` in the profile): the wait is the profile's fixed
// `max_batch_wait_ms`, the cap its `max_batch_tokens`, and reports are
// ignored.
//
// On, the rule (all times in one model's batches):
//   latency sample  L = queue wait of the batch's oldest item + service time
//                   (what the slowest request of the batch saw, so the
//                   controller errs on the side of latency);
//   estimate        E = EWMA of L, weight kSampleWeight for the newest sample;
//   after each batch:
//     - closed full (by count or cost budget): the wait did not limit the
//       batch, so waiting longer cannot fill it better; halve the excess over
//       min (kFullShrink), then apply the rule below if E is over target;
//     - E > target: shorten by kGain * (E - target)   (the wait is the only
//       part of the latency we control, so give back what we overshoot);
//     - E < target and the batch closed by the wait: lengthen by
//       kGain * (target - E) to fill batches better (bigger batches are
//       cheaper per item), spending the latency headroom gradually;
//     - clamp to [min_wait_ms, max_wait_ms].
//   The step is proportional to the error, so the wait settles where
//   E ≈ target (or at a bound) instead of oscillating like a fixed step does.
//
//   The cost cap: waiting is not the only latency a batch adds — a batch
//   that is big enough takes longer to run than the target by itself (long
//   passages, many of them). When a batch that closed on the cost cap ran
//   longer than the target, the cap scales by target / service (at most
//   halving it at once), so the next such batch runs in about the target;
//   whenever a batch runs in under half the target, the cap grows by
//   kCapGrowth, back up to the profile's budget. It never goes below
//   1/kCapFloorDivisor of the budget. Queue wait does not move the cap: in
//   overload, smaller batches would only lower throughput.
//   No windup: idle time is the time from the latest finished batch to the
//   arrival of the next item (nothing queued, nothing finishing). Once it
//   exceeds target_ms, the estimate is forgotten (the next batch seeds it) and
//   the wait decays toward min with a half-life of target_ms, so traffic after
//   an idle spell starts from a short wait, not a stale long one, and a
//   trickle of lone requests keeps the wait at min (waiting would not fill
//   their batches anyway). The wait only grows on a report of a batch that
//   ran, so it never grows while the queue is empty.
//
// Time comes in as arguments (no clock of its own), so tests need no sleeps.
//
// Threading: all methods are thread-safe; `mu_` guards the state. Wait() is
// called by LocalQueue under its own lock (lock order: LocalQueue::mu_, then
// this mu_); Report() is called by executor threads holding no other lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

#include "common/clock.h"
#include "catalog/model_spec.h"

namespace shoal::worker {

// What one batch did, as the executor saw it.
struct BatchOutcome {
  size_t items = 0;
  uint64_t cost = 0;
  bool closed_full = false;                    // by count or cost budget, not by the wait
  SteadyClock::duration queue_wait{};          // of the oldest item, until it was taken
  SteadyClock::duration service{};             // around BatchRunner::Run
  SteadyClock::time_point done{};              // when it finished
};

class BatchController {
 public:
  static constexpr double kSampleWeight = 0.3;  // EWMA weight of the newest latency sample
  static constexpr double kGain = 0.25;         // fraction of the latency error applied per batch
  static constexpr double kFullShrink = 0.5;    // a full batch keeps this much of the excess over min
  static constexpr double kCapGrowth = 1.25;     // the cost cap's growth after a quick batch
  static constexpr double kCapFloorDivisor = 16; // the cost cap's floor: budget / this

  BatchController() = default;  // off, no wait
  explicit BatchController(const BatchingSpec& spec) { Configure(spec); }

  // (Re)starts from the spec: adaptive starts at min_wait_ms.
  void Configure(const BatchingSpec& spec);

  // How long a partial batch may wait, counted from its oldest item's
  // arrival `oldest_arrival` (which ends any idle spell: decay is applied up
  // to it).
  std::chrono::microseconds Wait(SteadyClock::time_point oldest_arrival);

  void Report(const BatchOutcome& outcome);

  // The cost one batch may hold now (the profile's max_batch_tokens when off).
  uint32_t CostCap() const;

  bool adaptive() const;
  // The latency estimate in ms (negative when there is none); for tests and logs.
  double LatencyEstimateMs() const;

 private:
  // Decays for the idle time from the latest report to `busy_since`.
  void DecayLocked(SteadyClock::time_point busy_since);

  mutable std::mutex mu_;
  bool adaptive_ = false;          // guarded by mu_
  double fixed_us_ = 0;            // guarded by mu_; the wait when off
  double target_us_ = 0;           // guarded by mu_
  double min_us_ = 0, max_us_ = 0; // guarded by mu_
  double wait_us_ = 0;             // guarded by mu_; the current wait when on
  double budget_ = 0;              // guarded by mu_; max_batch_tokens
  uint32_t max_requests_ = 0;      // guarded by mu_; max_batch_requests
  double cap_ = 0;                 // guarded by mu_; the current cost cap
  double estimate_us_ = -1;        // guarded by mu_; < 0: none
  bool any_report_ = false;        // guarded by mu_
  SteadyClock::time_point last_report_{};       // guarded by mu_; latest `done`
  SteadyClock::duration idle_decayed_{};        // guarded by mu_; idle time already decayed for
};

}  // namespace shoal::worker
