// How a worker schedules pulled work (issue 4), against a real nats-server:
// batch budgets, no starvation of a cold model beside a hot one, executors
// of one worker sharing its local queue, and no redelivery while a long
// batch runs.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_client.h"
#include "support/metrics_text.h"
#include "support/test_cluster.h"
#include "support/wait.h"
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
  std::atomic<bool> answered{false};
  std::thread client([&] {
    HttpClient http(gateway->port());
    auto res = http.PostJson("/v1/encode/test/busy", Items(20, "busy"));
    EXPECT_TRUE(res.ok() && res->status == 200);
    answered = true;
  });
  // While the executor runs, the worker holds at most the next batch (and
  // a doorbell's one message); the rest waits in the stream for any worker.
  // Sampled from start to answer, however long that takes here.
  size_t most = 0;
  uint64_t most_in_stream = 0;
  while (!answered) {
    most = std::max(most, worker->local_queue_size());
    if (worker->batch_totals().batches > 0) most_in_stream = std::max(most_in_stream, cluster.StreamMessages());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  client.join();
  EXPECT_LE(most, 3u);
  EXPECT_GE(most_in_stream, 10u) << "the backlog was seen waiting in the stream while a batch ran";
  EXPECT_EQ(worker->batch_totals().items, 20u);
}

TEST(Scheduling, AnIdleWorkerDoesNotSpin) {
  TestCluster cluster;
  for (const char* id : {"test/a", "test/b", "test/c"}) cluster.Register(IdentityProfile(id, "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/c", 1);
  // Its first doorbells are out (one per model); then a 3 s window, the
  // quantity measured, not a wait for anything.
  ASSERT_TRUE(WaitFor([&] { return worker->pull_requests_sent() >= 3; }));
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

  std::thread hot([&] {
    HttpClient http(gateway->port());
    auto res = http.PostJson("/v1/encode/test/hot", Items(40, "hot"));
    EXPECT_TRUE(res.ok() && res->status == 200);
  });
  // The backlog is there: the hot model's batches have begun.
  ASSERT_TRUE(WaitFor([&] { return worker->batch_totals().batches > 0; }));
  HttpClient http(gateway->port());
  auto cold = http.PostJson("/v1/encode/test/cold", Items(1, "cold"));
  // Read after the answer: the count only grows, so under 40 means the hot
  // backlog was not yet through when the cold item was answered.
  const double hot_run =
      MetricValue(worker->RenderMetrics(), R"(shoal_worker_items_total{model="test/hot",outcome="succeeded"})").value_or(0);
  hot.join();
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(cold->status, 200) << cold->body;
  EXPECT_LT(hot_run, 40) << "the cold model waited for the hot model's whole backlog";
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
  auto res = http.PostJson("/v1/encode/test/slow", Items(2, "slow"));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;
  // One batch each, side by side.
  EXPECT_EQ(worker->batch_totals().most_running, 2) << "the two batches ran at the same time";
  EXPECT_EQ(worker->batch_totals().batches, 2u);
  EXPECT_EQ(worker->batch_totals().items, 2u) << "each item pulled once";
}

TEST(Scheduling, ABatchLongerThanAckWaitIsNotRedelivered) {
  TestCluster cluster;
  // AckWait 0.5 s, a batch of 1.5 s: only +WPI keeps JetStream from
  // handing the item out again while it runs.
  cluster.Register(IdentityProfile("test/long", "identity: {dim: 8, us_per_batch: 1500000}\n"
                                                "queue: {ack_wait_ms: 500, max_deliver: 5}\n"));
  // A second executor keeps a pull request open while the batch runs, so a
  // redelivery would have somewhere to go.
  auto worker = cluster.StartWorker({}, /*executors=*/2);
  cluster.WaitForWorkers("test/long", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  auto res = http.PostJson("/v1/encode/test/long", Items(1, "long"));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;
  // Once acked, nothing redelivers it; a redelivery before the ack would
  // have gone to the worker's next pull and counts in the consumer's
  // deliveries.
  EXPECT_EQ(cluster.WaitForEmptyStream(), 0u);
  EXPECT_EQ(cluster.ConsumerDeliveries("test/long"), 1u) << "delivered once, never again";
  EXPECT_EQ(worker->batch_totals().items, 1u) << "the item ran once";
}

}  // namespace
}  // namespace shoal::testing
