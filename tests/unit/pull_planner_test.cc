#include "worker/pull_planner.h"

#include <gtest/gtest.h>

namespace shoal::worker {
namespace {

using std::chrono::milliseconds;

std::vector<int64_t> PlanPulls(const std::vector<ModelPullState>& models, int idle_executors) {
  return worker::PlanPulls(models, idle_executors).want;
}

ModelPullState M(int64_t queued, int64_t backlog, int64_t since_ms, int64_t batch = 32) {
  ModelPullState m;
  m.queued = queued;
  m.backlog = backlog;
  m.batch = batch;
  m.since_batch = milliseconds(since_ms);
  return m;
}

TEST(PullPlanner, BusyExecutorsAskForNothing) {
  EXPECT_EQ(PlanPulls({M(0, 500, 10), M(0, 0, 10)}, 0), (std::vector<int64_t>{0, 0}));
}

TEST(PullPlanner, AFullBatchHereTakesTheFreeExecutor) {
  // One free executor and a full batch already here: the stream keeps the rest.
  EXPECT_EQ(PlanPulls({M(32, 500, 10), M(0, 40, 10)}, 1), (std::vector<int64_t>{0, 0}));
}

TEST(PullPlanner, OneBatchPerFreeExecutorForTheModelsThatNeedItMost) {
  // Two free executors: the two models with most waiting work (equal age)
  // get a batch each; the stream keeps the rest, and with every executor
  // spoken for there are no doorbells.
  const auto want = PlanPulls({M(0, 100, 10), M(0, 3, 10), M(0, 0, 10), M(0, 50, 10)}, 2);
  EXPECT_EQ(want, (std::vector<int64_t>{32, 0, 0, 32}));
}

TEST(PullPlanner, AnExecutorLeftOverRingsDoorbellsOnModelsWithNothingHere) {
  // Three free executors, one model with a backlog: a batch for it, and a
  // doorbell on each model with nothing queued here.
  const auto want = PlanPulls({M(0, 100, 10), M(0, 0, 10), M(2, 0, 0)}, 3);
  EXPECT_EQ(want, (std::vector<int64_t>{32, 1, 30}));
  EXPECT_EQ(PlanPulls({M(0, 0, 10), M(0, 0, 10)}, 1), (std::vector<int64_t>{1, 1})) << "idle";
}

TEST(PullPlanner, TopsUpABatchFormingHere) {
  EXPECT_EQ(PlanPulls({M(5, 100, 10)}, 1), (std::vector<int64_t>{27}));
  // Nothing in the stream, a batch waiting to fill: it still asks for the
  // rest (the request fills the batch while it waits).
  EXPECT_EQ(PlanPulls({M(5, 0, 10)}, 1), (std::vector<int64_t>{27}));
}

TEST(PullPlanner, AColdModelIsNotStarvedBesideAHotOne) {
  // Hot: a big backlog, served 2 ms ago. Cold: one item, waiting 10 ms:
  // the hot one first (3 × √32 > 11 × 1); after 20 ms, the cold one.
  EXPECT_EQ(PlanPulls({M(0, 500, 2), M(0, 1, 10)}, 1), (std::vector<int64_t>{32, 0}));
  EXPECT_EQ(PlanPulls({M(0, 500, 2), M(0, 1, 20)}, 1), (std::vector<int64_t>{0, 32}));
  // Two free executors: both.
  EXPECT_EQ(PlanPulls({M(0, 500, 2), M(0, 1, 10)}, 2), (std::vector<int64_t>{32, 32}));
}

TEST(PullPlanner, ProbesWhatItHasNotHeardOfAndChoosesOnceTheAnswersAreIn) {
  ModelPullState stale = M(0, 3, 50);  // last seen with 3 waiting
  stale.known = false;
  const PullPlan plan = worker::PlanPulls({M(0, 20, 10), stale, M(3, 0, 20)}, 1);
  EXPECT_EQ(plan.probe, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(plan.want, (std::vector<int64_t>{0, 0, 0})) << "no choice before the answer";
  stale.probing = true;
  EXPECT_EQ(worker::PlanPulls({M(0, 20, 10), stale}, 1).probe, (std::vector<bool>{false, false}))
      << "one probe at a time";
  // The answer: 7 waiting, and it has waited longest.
  const PullPlan after = worker::PlanPulls({M(0, 20, 10), M(0, 7, 50), M(3, 0, 20)}, 1);
  EXPECT_EQ(after.want, (std::vector<int64_t>{0, 32, 0}));
  // Busy: no probes either.
  EXPECT_EQ(worker::PlanPulls({stale}, 0).probe, (std::vector<bool>{false}));
}

TEST(PullPlanner, InteractiveWorkIsChosenBeforeBatchWork) {
  ModelPullState batch = M(0, 5000, 500);  // a flood of batch work, waiting long
  batch.batch_class = true;
  // One free executor: the interactive backlog, young and small, wins.
  EXPECT_EQ(PlanPulls({batch, M(0, 2, 1)}, 1), (std::vector<int64_t>{0, 32}));
  // Two: batch work fills the one interactive work leaves idle.
  EXPECT_EQ(PlanPulls({batch, M(0, 2, 1)}, 2), (std::vector<int64_t>{32, 32}));
  // No interactive work: batch work takes it, and the idle interactive
  // consumer keeps no doorbell (every executor is spoken for).
  EXPECT_EQ(PlanPulls({batch, M(0, 0, 1)}, 1), (std::vector<int64_t>{32, 0}));
  // An interactive backlog not heard of lately is probed before batch work
  // is chosen.
  ModelPullState stale = M(0, 0, 1);
  stale.known = false;
  const PullPlan plan = worker::PlanPulls({batch, stale}, 1);
  EXPECT_EQ(plan.probe, (std::vector<bool>{false, true}));
  EXPECT_EQ(plan.want, (std::vector<int64_t>{0, 0}));
}

TEST(PullPlanner, PredictedBatchFollowsTheTokenBudget) {
  EXPECT_EQ(PredictedBatchItems(32, 16384, 0), 32) << "no cost seen yet";
  EXPECT_EQ(PredictedBatchItems(32, 16384, 100), 32);
  EXPECT_EQ(PredictedBatchItems(32, 1000, 100), 10);
  EXPECT_EQ(PredictedBatchItems(32, 100, 5000), 1) << "an oversize item still makes a batch";
}

}  // namespace
}  // namespace shoal::worker
