// Priority classes on the shared queue (queue/priority.h), against a real
// nats-server, gateway and worker: interactive work overtakes a backlog of
// batch work, batch-class sequences step aside for an interactive one in a
// full generation engine, batch work is served like any other, and a bad
// class is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

std::string NumberedItems(int n, const std::string& text) {
  json j;
  j["items"] = json::array();
  for (int i = 0; i < n; ++i) j["items"].push_back({{"text", text + " " + std::to_string(i)}});
  return j.dump();
}

TEST(Priority, InteractiveWorkOvertakesABatchBacklog) {
  TestCluster cluster;
  // One executor, batches of 2 that take 20 ms: 60 batch-class items are
  // 600 ms of work.
  cluster.Register(IdentityProfile("test/prio", "identity: {dim: 8, us_per_batch: 20000}\n"
                                                "batching: {max_batch_requests: 2}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/prio", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);

  std::atomic<bool> batch_done{false};
  std::thread batch_client([&] {
    HttpClient http(gateway->port());
    auto res = http.PostJson("/v1/encode/test/prio", NumberedItems(60, "batch"), {{"X-Shoal-Priority", "batch"}});
    EXPECT_TRUE(res.ok() && res->status == 200) << (res.ok() ? res->body : res.status().ToString());
    batch_done = true;
  });
  // The batch work is running, and most of it waits in the stream.
  ASSERT_TRUE(WaitFor([&] { return worker->batch_totals().batches >= 1 && cluster.StreamMessages() >= 40; }));

  HttpClient http(gateway->port());
  // The cluster view counts the backlog by class (shoal status prints it).
  auto cluster_view = http.Get("/v1/cluster");
  ASSERT_TRUE(cluster_view.ok());
  const json model = json::parse(cluster_view->body)["models"][0];
  EXPECT_GE(model["waiting_batch"].get<uint64_t>(), 20u) << model;
  EXPECT_EQ(model["waiting"], model["waiting_batch"]) << "no interactive work waits yet";

  auto res = http.PostJson("/v1/encode/test/prio", NumberedItems(2, "interactive"));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;
  // Served ahead of the backlog: most of the batch work still waits. (In
  // one class it would have waited behind all of it.)
  EXPECT_FALSE(batch_done.load());
  EXPECT_GE(cluster.StreamMessages(), 20u) << "the interactive request waited behind the batch work";
  batch_client.join();
  EXPECT_EQ(worker->batch_totals().items, 62u);
  EXPECT_EQ(cluster.ConsumerDeliveries("test/prio", "default", queue::Priority::kBatch), 60u);
  EXPECT_EQ(cluster.ConsumerDeliveries("test/prio", "default", queue::Priority::kInteractive), 2u);
}

TEST(Priority, BatchSequencesStepAsideForAnInteractiveOne) {
  TestCluster cluster;
  // Room for two sequences at once.
  cluster.Register("id: qwen3\nruntime: native\ntask: generate\npath: " + kModels +
                   "/qwen3-tiny\npinned: true\nbatching: {max_batch_requests: 2, max_batch_tokens: 64}\n"
                   "native: {max_context: 2048, kv_cache_tokens: 8192, kv_block_tokens: 8}\n");
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("qwen3", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  const std::string long_job =
      json{{"model", "qwen3"}, {"prompt", "Once"}, {"max_tokens", 1500}, {"ignore_eos", true}, {"stream", true},
           {"stream_options", {{"include_usage", true}}}}
          .dump();

  // Two batch-class sequences fill the engine.
  std::vector<std::unique_ptr<StreamConnection>> jobs;
  std::vector<std::vector<std::string>> events(2);
  for (int i = 0; i < 2; ++i) {
    auto c = std::make_unique<StreamConnection>(gateway->port(), 60000);
    ASSERT_TRUE(c->Send("POST", "/v1/completions", long_job,
                        {{"Content-Type", "application/json"}, {"X-Shoal-Priority", "batch"}})
                    .ok());
    auto head = c->ReadHead();
    ASSERT_TRUE(head.ok());
    ASSERT_EQ(head->status, 200) << head->body;
    auto first = c->NextEvent();  // generating
    ASSERT_TRUE(first.ok());
    events[i].push_back(*first);
    jobs.push_back(std::move(c));
  }
  const uint64_t preemptions = worker->generation("qwen3")->preemptions;

  // An interactive request gets in at once, in a batch-class sequence's place.
  HttpClient http(gateway->port());
  auto res = http.PostJson("/v1/completions", json{{"model", "qwen3"}, {"prompt", "Hello"}, {"max_tokens", 8}}.dump());
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;
  const auto during = worker->generation("qwen3");
  EXPECT_GT(during->preemptions, preemptions) << "the interactive request waited for a batch-class one to end";
  EXPECT_LT(during->tokens_generated, 2 * 1500u) << "the batch work was already done";

  // The batch work resumes and ends whole. (Its text is not compared with
  // an uninterrupted run's: over 1500 tokens, batches of other shapes round
  // differently and flip a near-tie of this random model's argmax.)
  for (int i = 0; i < 2; ++i) {
    auto rest = jobs[i]->RemainingEvents();
    ASSERT_TRUE(rest.ok());
    events[i].insert(events[i].end(), rest->begin(), rest->end());
    std::string finish;
    int64_t completion_tokens = 0;
    for (const std::string& e : events[i]) {
      const json j = json::parse(e, nullptr, false);  // the last, [DONE], is not JSON
      if (!j.is_object()) continue;
      if (j.contains("usage") && j["usage"].is_object()) completion_tokens = j["usage"]["completion_tokens"];
      if (!j.contains("choices") || j["choices"].empty()) continue;
      if (j["choices"][0]["finish_reason"].is_string()) finish = j["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(finish, "length");
    EXPECT_EQ(completion_tokens, 1500);
  }
}

TEST(Priority, BatchWorkIsAnsweredLikeAnyOtherAndABadClassIsRefused) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/prio", "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/prio", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  const std::string body = json{{"model", "test/prio"}, {"input", {"one", "two"}}}.dump();
  auto plain = http.PostJson("/v1/embeddings", body);
  auto batch = http.PostJson("/v1/embeddings", body, {{"X-Shoal-Priority", "batch"}});
  ASSERT_TRUE(plain.ok() && batch.ok());
  ASSERT_EQ(plain->status, 200) << plain->body;
  ASSERT_EQ(batch->status, 200) << batch->body;
  EXPECT_EQ(json::parse(batch->body)["data"], json::parse(plain->body)["data"]);
  EXPECT_EQ(cluster.ConsumerDeliveries("test/prio", "default", queue::Priority::kBatch), 2u);

  for (const char* bad : {"urgent", "BATCH", "1"}) {
    auto res = http.PostJson("/v1/embeddings", body, {{"X-Shoal-Priority", bad}});
    ASSERT_TRUE(res.ok());
    EXPECT_EQ(res->status, 400) << bad;
    EXPECT_NE(res->body.find("X-Shoal-Priority"), std::string::npos) << res->body;
    EXPECT_NE(res->body.find("INVALID_INPUT"), std::string::npos) << res->body;
  }
}

}  // namespace
}  // namespace shoal::testing
