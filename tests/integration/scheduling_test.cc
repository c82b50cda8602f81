// How a worker schedules pulled work (issue 4), against a real nats-server:
// batch budgets, no starvation of a cold model beside a hot one, executors
// of one worker sharing its local queue, and no redelivery while a long
// batch runs.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_client.h"
#include "support/test_cluster.h"
#include "worker/worker.h"

namespace shoal::testing {
namespace {

std::string Items(int n, const std::string& text) {
  nlohmann::json j;
  j["items"] = nlohmann::json::array();
  for (int i = 0; i < n; ++i) j["items"].push_back({{"text", text}});
  return j.dump();
}

TEST(Scheduling, BatchesKeepToTheProfilesCountAndTokenBudgets) {
  TestCluster cluster;
  // A 50 ms wait lets every item of a request reach the worker before its
  // first batch closes: only the budgets can split them.
  cluster.Register(IdentityProfile("test/count", "identity: {dim: 8, us_per_batch: 20000}\n"
                                                 "batching: {max_batch_requests: 4, max_batch_wait_ms: 50}\n"));
  cluster.Register(IdentityProfile("test/tokens",
                                   "identity: {dim: 8, us_per_batch: 20000}\n"
                                   "batching: {max_batch_requests: 64, max_batch_tokens: 40, "
                                   "max_batch_wait_ms: 50}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/tokens", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());

  // 12 one-token items, at most 4 a batch: at least 3 batches.
  auto res = http.PostJson("/v1/encode/test/count", Items(12, "a"));
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body;
  auto totals = worker->batch_totals();
  EXPECT_EQ(totals.items, 12u);
  EXPECT_GE(totals.batches, 3u);

  // 12 items of 15 tokens (59 bytes at ~4 bytes a token), at most 40 tokens
  // a batch: two a batch, at least 6 more batches.
  const std::string text(59, 'x');
  res = http.PostJson("/v1/encode/test/tokens", Items(12, text));
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body;
  const auto before = totals;
  totals = worker->batch_totals();
  EXPECT_EQ(totals.items - before.items, 12u);
  EXPECT_GE(totals.batches - before.batches, 6u);
}

TEST(Scheduling, ABusyWorkerLeavesTheBacklogInTheStream) {
  TestCluster cluster;
  // Batches of 2 that take 300 ms: 20 items are 3 s of work for one executor.
  cluster.Register(IdentityProfile("test/busy", "identity: {dim: 8, us_per_batch: 300000}\n"
                                                "batching: {max_batch_requests: 2}\n"
                                                "queue: {ack_wait_ms: 10000, max_deliver: 5}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/busy", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  std::thread client([&] {
    HttpClient http(gateway->port());
    auto res = http.PostJson("/v1/encode/test/busy", Items(20, "busy"));
    EXPECT_TRUE(res.ok() && res->status == 200);
  });
  // While the executor runs, the worker holds at most the next batch (and
  // a doorbell's one message); the rest waits in the stream for any worker.
  size_t most = 0;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    most = std::max(most, worker->local_queue_size());
  }
  client.join();
  EXPECT_LE(most, 3u);
  EXPECT_EQ(worker->batch_totals().items, 20u);
}

TEST(Scheduling, AnIdleWorkerDoesNotSpin) {
  TestCluster cluster;
  for (const char* id : {"test/a", "test/b", "test/c"}) cluster.Register(IdentityProfile(id, "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/c", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t before = worker->pull_requests_sent();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  // Long polls: one doorbell per model every 2 s, not a request per tick.
  EXPECT_LE(worker->pull_requests_sent() - before, 9u);
}

TEST(Scheduling, AColdModelIsServedWhileAHotModelsBacklogIsStillThere) {
  TestCluster cluster;
  // One executor; each hot item is a batch of its own that takes 100 ms, so
  // 40 of them are 4 s of backlog.
  cluster.Register(IdentityProfile("test/hot", "identity: {dim: 8, us_per_batch: 100000}\n"
                                               "batching: {max_batch_requests: 1}\n"
                                               "queue: {ack_wait_ms: 10000, max_deliver: 5}\n"));
  cluster.Register(IdentityProfile("test/cold", "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/cold", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);

  std::atomic<bool> hot_done{false};
  std::thread hot([&] {
    HttpClient http(gateway->port());
    auto res = http.PostJson("/v1/encode/test/hot", Items(40, "hot"));
    EXPECT_TRUE(res.ok() && res->status == 200);
    hot_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the backlog is there
  HttpClient http(gateway->port());
  auto cold = http.PostJson("/v1/encode/test/cold", Items(1, "cold"));
  const bool hot_still_running = !hot_done;
  hot.join();
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(cold->status, 200) << cold->body;
  EXPECT_TRUE(hot_still_running) << "the cold model waited for the hot model's whole backlog";
}

TEST(Scheduling, ExecutorsOfOneWorkerShareItsLocalQueue) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/slow", "identity: {dim: 8, us_per_batch: 600000}\n"
                                                "batching: {max_batch_requests: 1}\n"
                                                "queue: {ack_wait_ms: 10000, max_deliver: 5}\n"));
  auto worker = cluster.StartWorker({}, /*executors=*/2);
  cluster.WaitForWorkers("test/slow", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  const auto t0 = std::chrono::steady_clock::now();
  auto res = http.PostJson("/v1/encode/test/slow", Items(2, "slow"));
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;
  // One batch each, side by side: 0.6 s, where one executor would take 1.2 s.
  EXPECT_LT(elapsed, std::chrono::milliseconds(1100));
  EXPECT_EQ(worker->batch_totals().batches, 2u);
  EXPECT_EQ(worker->batch_totals().items, 2u) << "each item pulled once";
}

TEST(Scheduling, ABatchLongerThanAckWaitIsNotRedelivered) {
  TestCluster cluster;
  // AckWait 0.5 s, a batch of 1.5 s: only +WPI keeps JetStream from
  // handing the item out again while it runs.
  cluster.Register(IdentityProfile("test/long", "identity: {dim: 8, us_per_batch: 1500000}\n"
                                                "queue: {ack_wait_ms: 500, max_deliver: 5}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/long", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  auto res = http.PostJson("/v1/encode/test/long", Items(1, "long"));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // a redelivery would have come by now
  EXPECT_EQ(worker->batch_totals().items, 1u) << "the item ran once";
  EXPECT_EQ(cluster.WaitForEmptyStream(), 0u);
}

}  // namespace
}  // namespace shoal::testing
