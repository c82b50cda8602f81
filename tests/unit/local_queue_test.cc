#include "worker/local_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace shoal::worker {
namespace {

std::shared_ptr<ServedModel> Model(uint32_t max_requests, uint32_t max_tokens, uint32_t wait_ms = 0) {
  auto spec = std::make_shared<ModelSpec>();
  spec->id = "m";
  spec->batching.max_batch_requests = max_requests;
  spec->batching.max_batch_tokens = max_tokens;
  spec->batching.max_batch_wait_ms = wait_ms;
  auto m = std::make_shared<ServedModel>();
  m->spec = spec;
  m->batching.Configure(spec->batching);
  return m;
}

// The worker's item gate: every item holds a place, as the intake gives it.
Gate& Items() {
  static Gate gate;
  return gate;
}

WorkItem Item(const std::shared_ptr<ServedModel>& m, uint32_t index, uint32_t cost,
             queue::Priority priority = queue::Priority::kInteractive) {
  WorkItem it;
  it.model = m;
  it.priority = priority;
  it.ticket = ItemTicket(m.get(), *Items().TryEnter(), priority == queue::Priority::kBatch);
  it.work.item = index;
  it.work.cost = cost;
  it.received = SteadyClock::now();
  return it;
}

std::vector<uint32_t> Costs(const std::vector<WorkItem>& batch) {
  std::vector<uint32_t> out;
  for (const auto& it : batch) out.push_back(it.work.cost);
  return out;
}

std::vector<uint32_t> Indices(const std::vector<WorkItem>& batch) {
  std::vector<uint32_t> out;
  for (const auto& it : batch) out.push_back(it.work.item);
  return out;
}

TEST(LocalQueue, BatchesCloseOnCountThenOnTokens) {
  LocalQueue q;
  auto m = Model(3, 100);
  for (uint32_t i = 0; i < 5; ++i) q.Push(Item(m, i, 10));
  EXPECT_EQ(m->queued.load(), 5);
  std::vector<WorkItem> batch = q.TakeBatch();
  EXPECT_EQ(Indices(batch), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(m->in_flight.load(), 3);
  EXPECT_EQ(m->queued.load(), 2);
  batch.clear();  // run and settled: the items' tickets give their counts back
  EXPECT_EQ(m->in_flight.load(), 0);
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(m->queued.load(), 0);

  auto t = Model(10, 25);
  for (uint32_t i = 0; i < 4; ++i) q.Push(Item(t, i, 10));
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{0, 1})) << "30 tokens would exceed 25";
}

TEST(LocalQueue, AnOversizeItemRunsAlone) {
  LocalQueue q;
  auto m = Model(8, 50);
  q.Push(Item(m, 0, 500));
  q.Push(Item(m, 1, 5));
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{0}));
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{1}));
}

TEST(LocalQueue, TheModelWithTheOldestItemGoesFirst) {
  LocalQueue q;
  auto a = Model(8, 1000), b = Model(8, 1000);
  q.Push(Item(b, 10, 1));
  q.Push(Item(a, 20, 1));
  q.Push(Item(b, 11, 1));
  auto first = q.TakeBatch();
  EXPECT_EQ(first.front().model, b);
  EXPECT_EQ(Indices(first), (std::vector<uint32_t>{10, 11})) << "a batch holds one model";
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{20}));
}

// Returns once `n` takers are blocked in TakeBatch: the event the tests
// below act on, so a slow machine cannot reorder them.
void WaitForTakers(const LocalQueue& q, int n) {
  while (q.waiting() < n) std::this_thread::yield();
}

TEST(LocalQueue, WaitsForMoreUpToTheProfilesWait) {
  LocalQueue q;
  // A wait no test machine outlasts: the batch can only close by filling.
  auto m = Model(4, 1000, /*wait_ms=*/60000);
  q.Push(Item(m, 0, 1));
  std::thread late([&] {
    WaitForTakers(q, 1);  // the taker is waiting with one item
    for (uint32_t i = 1; i < 4; ++i) q.Push(Item(m, i, 1));
  });
  auto batch = q.TakeBatch();
  late.join();
  EXPECT_EQ(batch.size(), 4u) << "a full batch closes before the wait ends";

  auto partial = Model(4, 1000, /*wait_ms=*/200);
  WorkItem alone = Item(partial, 9, 1);
  const auto received = alone.received;
  q.Push(std::move(alone));
  EXPECT_EQ(q.TakeBatch().size(), 1u);
  EXPECT_GE(SteadyClock::now() - received, std::chrono::milliseconds(200)) << "a partial batch waits its wait";
}

TEST(LocalQueue, AWaitingModelDoesNotHoldUpAnotherModelsReadyBatch) {
  LocalQueue q;
  auto slow = Model(8, 1000, /*wait_ms=*/10000);  // would wait for its batch to fill
  auto ready = Model(8, 1000, /*wait_ms=*/0);
  q.Push(Item(slow, 1, 1));  // older
  q.Push(Item(ready, 2, 1));
  const auto t0 = SteadyClock::now();
  auto batch = q.TakeBatch();
  EXPECT_EQ(Indices(batch), (std::vector<uint32_t>{2})) << "the ready model runs; the older one keeps waiting";
  EXPECT_LT(SteadyClock::now() - t0, std::chrono::seconds(5));
  // A full batch of the waiting model runs at once.
  for (uint32_t i = 3; i < 10; ++i) q.Push(Item(slow, i, 1));
  EXPECT_EQ(q.TakeBatch().size(), 8u);
}

TEST(LocalQueue, ABatchRunsLongestFirst) {
  LocalQueue q;
  auto m = Model(8, 1000);
  const uint32_t costs[] = {3, 40, 7, 40, 1, 12};
  for (uint32_t i = 0; i < 6; ++i) q.Push(Item(m, i, costs[i]));
  bool full = true;
  auto batch = q.TakeBatch(&full);
  EXPECT_FALSE(full);
  EXPECT_EQ(Costs(batch), (std::vector<uint32_t>{40, 40, 12, 7, 3, 1}));
  EXPECT_EQ(Indices(batch), (std::vector<uint32_t>{1, 3, 5, 2, 0, 4})) << "ties keep arrival order";
}

TEST(LocalQueue, BudgetsHoldAndAreReportedAsFull) {
  LocalQueue q;
  auto m = Model(3, 50);
  // Arrival order decides membership; sorting only reorders within the batch.
  const uint32_t costs[] = {10, 30, 5, 20, 8};
  for (uint32_t i = 0; i < 5; ++i) q.Push(Item(m, i, costs[i]));
  bool full = false;
  auto first = q.TakeBatch(&full);
  EXPECT_TRUE(full) << "5 more tokens fit, but the count budget is 3";
  EXPECT_EQ(Indices(first), (std::vector<uint32_t>{1, 0, 2}));
  auto second = q.TakeBatch(&full);
  EXPECT_FALSE(full);
  EXPECT_EQ(Indices(second), (std::vector<uint32_t>{3, 4}));

  auto exact = Model(2, 50, /*wait_ms=*/10000);
  q.Push(Item(exact, 0, 1));
  q.Push(Item(exact, 1, 1));
  EXPECT_EQ(q.TakeBatch(&full).size(), 2u) << "exactly at the count: no wait";
  EXPECT_TRUE(full);

  auto t = Model(10, 50);
  for (uint32_t i = 0; i < 4; ++i) q.Push(Item(t, i, 20));
  auto by_tokens = q.TakeBatch(&full);
  EXPECT_TRUE(full) << "a third item would make 60 tokens";
  EXPECT_EQ(by_tokens.size(), 2u);
}

TEST(LocalQueue, AnOversizeItemRunsAloneAmongSmallOnes) {
  LocalQueue q;
  auto m = Model(8, 50);
  q.Push(Item(m, 0, 5));
  q.Push(Item(m, 1, 500));
  q.Push(Item(m, 2, 5));
  bool full = false;
  EXPECT_EQ(Indices(q.TakeBatch(&full)), (std::vector<uint32_t>{0})) << "500 does not fit beside 5";
  EXPECT_TRUE(full);
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{1}));
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{2}));
}

TEST(LocalQueue, ALowTrafficModelIsNotStarvedBesideAHotOne) {
  LocalQueue q;
  auto hot = Model(2, 1000), cold = Model(2, 1000);
  const auto t0 = SteadyClock::now() - std::chrono::seconds(1);
  auto at = [&](const std::shared_ptr<ServedModel>& m, uint32_t index, int ms) {
    WorkItem it = Item(m, index, 1);
    it.received = t0 + std::chrono::milliseconds(ms);
    return it;
  };
  for (uint32_t i = 0; i < 4; ++i) q.Push(at(hot, i, static_cast<int>(i)));
  q.Push(at(cold, 100, 4));
  for (uint32_t i = 4; i < 10; ++i) q.Push(at(hot, i, 1 + static_cast<int>(i)));
  // The cold item is older than every hot item after the first two batches.
  EXPECT_EQ(q.TakeBatch().front().model, hot);
  EXPECT_EQ(q.TakeBatch().front().model, hot);
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{100}));
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{4, 5}));
}

TEST(LocalQueue, AnAdaptiveModelStartsAtItsMinimumWait) {
  LocalQueue q;
  auto m = Model(4, 1000, /*wait_ms=*/10000);  // the fixed wait is not used when adaptive
  auto spec = std::make_shared<ModelSpec>(*m->spec);
  spec->batching.adaptive = {true, /*target_ms=*/50, /*min_wait_ms=*/0, /*max_wait_ms=*/10000};
  m->spec = spec;
  m->batching.Configure(spec->batching);
  q.Push(Item(m, 0, 1));
  bool full = true;
  EXPECT_EQ(q.TakeBatch(&full).size(), 1u) << "no wait: would block 10 s otherwise";
  EXPECT_FALSE(full);
}

TEST(LocalQueue, BatchesKeepToTheCostCapTheControllerLowered) {
  LocalQueue q;
  auto m = Model(32, 100);
  auto spec = std::make_shared<ModelSpec>(*m->spec);
  spec->batching.adaptive = {true, /*target_ms=*/40, /*min_wait_ms=*/0, /*max_wait_ms=*/0};
  m->spec = spec;
  m->batching.Configure(spec->batching);
  // A batch closed on cost that ran 80 ms against a 40 ms target: cap 100 → 50.
  BatchOutcome slow;
  slow.items = 10;
  slow.closed_full = true;
  slow.service = std::chrono::milliseconds(80);
  slow.done = SteadyClock::now();
  m->batching.Report(slow);
  for (uint32_t i = 0; i < 10; ++i) q.Push(Item(m, i, 10));
  bool full = false;
  EXPECT_EQ(q.TakeBatch(&full).size(), 5u);
  EXPECT_TRUE(full);
}

TEST(LocalQueue, CloseHandsOutTheRestThenEnds) {
  LocalQueue q;
  auto m = Model(2, 1000, 10000);
  q.Push(Item(m, 0, 1));
  std::thread closer([&] {
    WaitForTakers(q, 1);  // the taker is waiting for its batch to fill
    q.Close();
  });
  EXPECT_EQ(q.TakeBatch().size(), 1u) << "closing stops the wait";
  closer.join();
  EXPECT_TRUE(q.TakeBatch().empty());
}

TEST(LocalQueue, InteractiveItemsGoFirst) {
  LocalQueue q;
  auto a = Model(3, 1000), b = Model(3, 1000);
  using queue::Priority;
  // Batch work for `a` arrived first, then interactive work for both.
  for (uint32_t i = 0; i < 4; ++i) q.Push(Item(a, i, 1, Priority::kBatch));
  q.Push(Item(b, 10, 1));
  q.Push(Item(a, 11, 1));
  EXPECT_EQ(a->batch_queued.load(), 4);
  EXPECT_EQ(a->queued.load(), 5);
  // Models with interactive work first, by their oldest interactive item:
  // `b`, then `a`, whose batch takes its interactive item before its
  // batch-class ones.
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{10}));
  std::vector<WorkItem> batch = q.TakeBatch();
  EXPECT_EQ(Indices(batch), (std::vector<uint32_t>{11, 0, 1}));
  EXPECT_EQ(a->batch_queued.load(), 2);
  EXPECT_EQ(a->queued.load(), 2);
  // Batch-class work waits while batches with interactive work run.
  std::vector<WorkItem> rest;
  std::thread taker([&] { rest = q.TakeBatch(); });
  WaitForTakers(q, 1);
  q.BatchDone(/*interactive=*/true);
  // One interactive batch still runs: the taker waits again, nothing taken.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(5);
  while (q.waiting() < 1 && SteadyClock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(q.size(), 2u);
  q.BatchDone(/*interactive=*/true);
  taker.join();
  EXPECT_EQ(Indices(rest), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(a->batch_queued.load(), 0);
}

TEST(LocalQueue, TakeAllForOneModel) {
  LocalQueue q;
  auto a = Model(8, 1000), b = Model(8, 1000);
  q.Push(Item(a, 0, 1));
  q.Push(Item(b, 1, 1));
  q.Push(Item(a, 2, 1));
  EXPECT_EQ(Indices(q.TakeAllFor(a.get())), (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(a->queued.load(), 0);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.TakeAll().size(), 1u);
  EXPECT_EQ(q.size(), 0u);
}

}  // namespace
}  // namespace shoal::worker
