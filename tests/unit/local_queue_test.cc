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
  return m;
}

WorkItem Item(const std::shared_ptr<ServedModel>& m, uint32_t index, uint32_t cost) {
  WorkItem it;
  it.model = m;
  it.index = index;
  it.cost = cost;
  it.received = SteadyClock::now();
  return it;
}

std::vector<uint32_t> Indices(const std::vector<WorkItem>& batch) {
  std::vector<uint32_t> out;
  for (const auto& it : batch) out.push_back(it.index);
  return out;
}

TEST(LocalQueue, BatchesCloseOnCountThenOnTokens) {
  LocalQueue q;
  auto m = Model(3, 100);
  for (uint32_t i = 0; i < 5; ++i) q.Push(Item(m, i, 10));
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(m->in_flight.load(), 3);
  EXPECT_EQ(m->queued.load(), 2);
  EXPECT_EQ(Indices(q.TakeBatch()), (std::vector<uint32_t>{3, 4}));

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

TEST(LocalQueue, WaitsForMoreUpToTheProfilesWait) {
  LocalQueue q;
  auto m = Model(4, 1000, /*wait_ms=*/200);
  q.Push(Item(m, 0, 1));
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    for (uint32_t i = 1; i < 4; ++i) q.Push(Item(m, i, 1));
  });
  auto batch = q.TakeBatch();
  late.join();
  EXPECT_EQ(batch.size(), 4u) << "a full batch closes before the wait ends";

  q.Push(Item(m, 9, 1));
  const auto t0 = SteadyClock::now();
  EXPECT_EQ(q.TakeBatch().size(), 1u);
  EXPECT_GE(SteadyClock::now() - t0, std::chrono::milliseconds(150)) << "a partial batch waits";
}

TEST(LocalQueue, CloseHandsOutTheRestThenEnds) {
  LocalQueue q;
  auto m = Model(2, 1000, 10000);
  q.Push(Item(m, 0, 1));
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    q.Close();
  });
  EXPECT_EQ(q.TakeBatch().size(), 1u) << "closing stops the wait";
  closer.join();
  EXPECT_TRUE(q.TakeBatch().empty());
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
