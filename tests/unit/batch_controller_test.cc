// BatchController with explicit times: a simulated model whose latency is
// its batch wait plus a service time, driven batch by batch. No sleeps.
#include "worker/batch_controller.h"

#include <gtest/gtest.h>

namespace shoal::worker {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

BatchingSpec Adaptive(uint32_t target_ms, uint32_t min_ms, uint32_t max_ms) {
  BatchingSpec spec;
  spec.max_batch_wait_ms = 7;  // must not be used while adaptive
  spec.adaptive = {true, target_ms, min_ms, max_ms};
  return spec;
}

double Ms(microseconds d) { return static_cast<double>(d.count()) / 1000.0; }

// Runs `n` back-to-back batches that close by the wait (or full), each
// waiting the controller's current wait and taking `service`. Returns the time
// after the last one.
SteadyClock::time_point Drive(BatchController& c, SteadyClock::time_point now, int n,
                              milliseconds service, bool full = false) {
  for (int i = 0; i < n; ++i) {
    const microseconds wait = c.Wait(now);
    BatchOutcome o;
    o.items = 4;
    o.cost = 40;
    o.closed_full = full;
    o.queue_wait = full ? microseconds(0) : wait;
    o.service = service;
    now += wait + service;
    o.done = now;
    c.Report(o);
  }
  return now;
}

TEST(BatchController, OffUsesTheFixedWaitAndIgnoresReports) {
  BatchingSpec spec;
  spec.max_batch_wait_ms = 7;
  BatchController c(spec);
  EXPECT_FALSE(c.adaptive());
  const auto t0 = SteadyClock::time_point{} + std::chrono::seconds(100);
  Drive(c, t0, 20, milliseconds(500));
  EXPECT_EQ(c.Wait(t0 + std::chrono::hours(1)), milliseconds(7));
  EXPECT_LT(c.LatencyEstimateMs(), 0);

  BatchController unconfigured;
  EXPECT_EQ(unconfigured.Wait(t0), microseconds(0));
}

TEST(BatchController, StartsAtMinAndConvergesToTheTargetFromBelow) {
  BatchController c(Adaptive(50, 0, 100));
  auto now = SteadyClock::time_point{} + std::chrono::seconds(100);
  EXPECT_EQ(c.Wait(now), microseconds(0));
  now = Drive(c, now, 100, milliseconds(10));
  // Latency = wait + 10 ms, so the wait settles near 40 ms.
  EXPECT_NEAR(c.LatencyEstimateMs(), 50, 2);
  EXPECT_NEAR(Ms(c.Wait(now)), 40, 2);
}

TEST(BatchController, ShortensWhenLatencyRisesAboveTheTarget) {
  BatchController c(Adaptive(50, 0, 100));
  auto now = SteadyClock::time_point{} + std::chrono::seconds(100);
  now = Drive(c, now, 100, milliseconds(10));
  ASSERT_NEAR(Ms(c.Wait(now)), 40, 2);
  // The model slows down: latency is now over target until the wait gives it back.
  now = Drive(c, now, 1, milliseconds(30));
  EXPECT_GT(c.LatencyEstimateMs(), 50);
  now = Drive(c, now, 100, milliseconds(30));
  EXPECT_NEAR(c.LatencyEstimateMs(), 50, 2);
  EXPECT_NEAR(Ms(c.Wait(now)), 20, 2);
}

TEST(BatchController, RespectsMinAndMax) {
  BatchController fast(Adaptive(50, 2, 15));
  auto now = SteadyClock::time_point{} + std::chrono::seconds(100);
  EXPECT_EQ(fast.Wait(now), milliseconds(2));
  now = Drive(fast, now, 100, milliseconds(1));  // would want 49 ms
  EXPECT_EQ(fast.Wait(now), milliseconds(15));

  BatchController slow(Adaptive(50, 2, 15));
  now = Drive(slow, now, 100, milliseconds(200));  // over target whatever the wait
  EXPECT_EQ(slow.Wait(now), milliseconds(2));
}

TEST(BatchController, ShortensWhenBatchesCloseFull) {
  BatchController c(Adaptive(50, 0, 100));
  auto now = SteadyClock::time_point{} + std::chrono::seconds(100);
  now = Drive(c, now, 100, milliseconds(10));
  const microseconds before = c.Wait(now);
  ASSERT_GT(before, milliseconds(30));
  // Full batches well under target: waiting longer cannot fill them more.
  now = Drive(c, now, 1, milliseconds(5), /*full=*/true);
  EXPECT_LT(c.Wait(now), before);
  now = Drive(c, now, 10, milliseconds(5), /*full=*/true);
  EXPECT_LT(c.Wait(now), milliseconds(1));
}

TEST(BatchController, DecaysAfterIdleInsteadOfWindingUp) {
  BatchController c(Adaptive(50, 1, 100));
  auto now = SteadyClock::time_point{} + std::chrono::seconds(100);
  now = Drive(c, now, 100, milliseconds(10));
  const double settled = Ms(c.Wait(now));
  ASSERT_NEAR(settled, 40, 2);

  // The next item arrives within the target: not idle, no decay.
  EXPECT_EQ(Ms(c.Wait(now + milliseconds(40))), settled);
  // It arrives 100 ms after the last batch: the estimate is stale and the
  // wait has halved per target_ms of idleness.
  const double after_100ms = Ms(c.Wait(now + milliseconds(100)));
  EXPECT_NEAR(after_100ms, 1 + (settled - 1) / 4, 0.5);
  EXPECT_LT(c.LatencyEstimateMs(), 0);
  // Asking again does not decay the same idle time twice.
  EXPECT_EQ(Ms(c.Wait(now + milliseconds(100))), after_100ms);
  // A long idle spell ends at min.
  EXPECT_NEAR(Ms(c.Wait(now + std::chrono::seconds(10))), 1, 0.01);

  // The first batch after idle seeds a fresh estimate from what it saw.
  now += std::chrono::seconds(10);
  BatchOutcome o;
  o.items = 1;
  o.cost = 1;
  o.queue_wait = milliseconds(1);
  o.service = milliseconds(80);  // over target: shorten, not grow from stale history
  o.done = now + milliseconds(81);
  c.Report(o);
  EXPECT_NEAR(c.LatencyEstimateMs(), 81, 0.01);
  EXPECT_EQ(c.Wait(o.done), milliseconds(1));
}

TEST(BatchController, ReportsOutOfOrderDoNotRewindIdleTime) {
  BatchController c(Adaptive(50, 0, 100));
  const auto t0 = SteadyClock::time_point{} + std::chrono::seconds(100);
  BatchOutcome late;
  late.service = milliseconds(5);
  late.done = t0 + milliseconds(10);
  c.Report(late);
  BatchOutcome early = late;
  early.done = t0;  // another executor's batch, reported after
  c.Report(early);
  const microseconds w = c.Wait(t0 + milliseconds(55));  // 45 ms after the latest: not idle
  EXPECT_GT(w, microseconds(0));
  EXPECT_NEAR(c.LatencyEstimateMs(), 5, 0.01) << "idle would have dropped the estimate";
}

// A batch that closed on cost (fewer items than max_batch_requests) and ran
// for `service`, reported right after it was taken.
BatchOutcome OnCost(SteadyClock::time_point done, milliseconds service, milliseconds queue_wait = {}) {
  BatchOutcome o;
  o.items = 3;
  o.cost = 3000;
  o.closed_full = true;
  o.queue_wait = queue_wait;
  o.service = service;
  o.done = done;
  return o;
}

TEST(BatchController, OffKeepsTheProfilesCostBudget) {
  BatchingSpec spec;
  spec.max_batch_tokens = 4096;
  BatchController c(spec);
  c.Report(OnCost(SteadyClock::time_point{} + milliseconds(100), milliseconds(500)));
  EXPECT_EQ(c.CostCap(), 4096u);
}

TEST(BatchController, ABatchThatRunsPastTheTargetLowersTheCostCap) {
  BatchingSpec spec = Adaptive(40, 0, 20);
  spec.max_batch_tokens = 4096;
  spec.max_batch_requests = 32;
  BatchController c(spec);
  EXPECT_EQ(c.CostCap(), 4096u);
  auto now = SteadyClock::time_point{} + milliseconds(1000);
  // 80 ms for a batch closed on cost, target 40: the cap halves.
  c.Report(OnCost(now, milliseconds(80)));
  EXPECT_EQ(c.CostCap(), 2048u);
  // 400 ms: at most halving at once.
  c.Report(OnCost(now + milliseconds(500), milliseconds(400)));
  EXPECT_EQ(c.CostCap(), 1024u);
  // Never under a sixteenth of the budget.
  for (int i = 0; i < 10; ++i) c.Report(OnCost(now + milliseconds(1000 + 500 * i), milliseconds(400)));
  EXPECT_EQ(c.CostCap(), 256u);
}

TEST(BatchController, QueueWaitAloneDoesNotLowerTheCostCap) {
  // Overload: latency far over target, but each batch runs within it.
  BatchingSpec spec = Adaptive(40, 0, 20);
  spec.max_batch_tokens = 4096;
  spec.max_batch_requests = 32;
  BatchController c(spec);
  auto now = SteadyClock::time_point{} + milliseconds(1000);
  for (int i = 0; i < 20; ++i) c.Report(OnCost(now + milliseconds(30 * i), milliseconds(30), milliseconds(900)));
  EXPECT_EQ(c.CostCap(), 4096u);
}

TEST(BatchController, QuickBatchesGrowTheCostCapBackToTheBudget) {
  BatchingSpec spec = Adaptive(40, 0, 20);
  spec.max_batch_tokens = 4096;
  spec.max_batch_requests = 32;
  BatchController c(spec);
  auto now = SteadyClock::time_point{} + milliseconds(1000);
  c.Report(OnCost(now, milliseconds(160)));
  EXPECT_EQ(c.CostCap(), 2048u);
  c.Report(OnCost(now + milliseconds(10), milliseconds(10)));
  EXPECT_EQ(c.CostCap(), 2560u) << "× 1.25";
  for (int i = 0; i < 10; ++i) c.Report(OnCost(now + milliseconds(20 + 10 * i), milliseconds(10)));
  EXPECT_EQ(c.CostCap(), 4096u) << "never over the budget";
}

}  // namespace
}  // namespace shoal::worker
