// Residency through the whole path (gateway, JetStream, workers): lazy
// loading on the first request, pinned models that are never evicted,
// eviction under a small budget that spares a model with a batch in flight,
// a load failure that ends in 502 MODEL_LOAD_FAILED without retries, a hot
// model that gains a replica as its backlog grows, and placement among
// three workers that survives the holder being killed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/wait.h"
#include "worker/placement.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMiB = 1 << 20;

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string Lazy(const std::string& id, const std::string& identity = "{memory_mb: 1}") {
  return IdentityProfile(id, "pinned: false\nidentity: " + identity + "\n");
}

HttpResult Encode(int port, const std::string& model, const std::string& text = "hello there",
                  int timeout_ms = 20000) {
  HttpClient http(port, timeout_ms + 5000);
  auto res = http.PostJson("/v1/encode/" + model, R"({"items":[{"text":")" + text + R"("}]})",
                           {{"X-Shoal-Timeout-Ms", std::to_string(timeout_ms)}});
  EXPECT_TRUE(res.ok()) << res.status().ToString();
  return res.ok() ? *res : HttpResult{};
}

TEST(Residency, AModelLoadsOnItsFirstRequestNotBefore) {
  TestCluster cluster;
  cluster.Register(Lazy("t/lazy"));
  auto worker = cluster.StartWorker();
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(WaitFor([&] { return Has(worker->ServedModels(), "t/lazy"); }));
  // Two placement rounds after it knew the model: one began after, and looked.
  const uint64_t rounds = worker->residency().placement_rounds;
  ASSERT_TRUE(WaitFor([&] { return worker->residency().placement_rounds >= rounds + 2; }));
  EXPECT_FALSE(Has(worker->residency().resident, "t/lazy"));
  EXPECT_FALSE(Has(worker->residency().loading, "t/lazy"));

  HttpResult first = Encode(gateway->port(), "t/lazy");
  EXPECT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.Header("x-shoal-cold-start"), "1") << "it waited for the load";
  const auto view = worker->residency();
  EXPECT_TRUE(Has(view.resident, "t/lazy"));
  EXPECT_EQ(view.counters.loads, 1u);
  EXPECT_EQ(view.used, 1 * kMiB);
  HttpResult second = Encode(gateway->port(), "t/lazy");
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.Header("x-shoal-cold-start"), "0");
  EXPECT_EQ(worker->residency().counters.loads, 1u) << "loaded once";

  // GET /v1/cluster says so (from the worker's next heartbeat).
  json model, self;
  ASSERT_TRUE(WaitFor([&] {
    HttpClient http(gateway->port());
    auto res = http.Get("/v1/cluster");
    if (!res.ok() || res->status != 200) return false;
    json view = json::parse(res->body);
    for (const auto& m : view["models"]) {
      if (m["id"] == "t/lazy") model = m;
    }
    if (view["workers"].size() == 1) self = view["workers"][0];
    return !model.is_null() && !model["resident_on"].empty();
  })) << model.dump();
  EXPECT_EQ(model["resident_on"][0], worker->id());
  EXPECT_EQ(model["pinned"], false);
  EXPECT_EQ(model["waiting"], 0);
  EXPECT_EQ(self["memory"]["used"], 1 * kMiB);
  EXPECT_GE(self["loads"].get<int>(), 1);
}

TEST(Residency, UnderASmallBudgetEvictionSparesPinnedAndBusyModels) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("t/pinned", "identity: {memory_mb: 1}\n"));
  cluster.Register(Lazy("t/slow", "{memory_mb: 1, us_per_batch: 1500000}"));
  cluster.Register(Lazy("t/idle"));
  cluster.Register(Lazy("t/new"));
  worker::WorkerOptions options;
  options.memory_budget = 3 * kMiB;  // the pinned model and two others
  auto worker = cluster.StartWorkerWith(options);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(WaitFor([&] { return Has(worker->residency().resident, "t/pinned"); }));

  EXPECT_EQ(Encode(gateway->port(), "t/idle").status, 200);
  EXPECT_EQ(Encode(gateway->port(), "t/slow").status, 200);  // loaded; 1.5 s a batch
  // A batch of t/slow in flight, then t/new needs room: t/idle goes, not
  // t/slow (busy) and not t/pinned.
  auto slow = std::async(std::launch::async, [&] { return Encode(gateway->port(), "t/slow"); });
  ASSERT_TRUE(WaitFor([&] { return Has(worker->residency().resident, "t/slow") &&
                                   worker->batch_totals().batches >= 3; }));
  EXPECT_EQ(Encode(gateway->port(), "t/new").status, 200);
  const auto view = worker->residency();
  EXPECT_TRUE(Has(view.resident, "t/pinned"));
  EXPECT_TRUE(Has(view.resident, "t/slow"));
  EXPECT_TRUE(Has(view.resident, "t/new"));
  EXPECT_FALSE(Has(view.resident, "t/idle"));
  EXPECT_EQ(view.counters.evictions, 1u);
  EXPECT_LE(view.used, view.budget);
  EXPECT_EQ(slow.get().status, 200) << "the busy model's batch finished";

  // The evicted model comes back on demand, in place of one idle now.
  EXPECT_EQ(Encode(gateway->port(), "t/idle").status, 200);
  EXPECT_TRUE(Has(worker->residency().resident, "t/pinned"));
}

TEST(Residency, AModelThatFailsToLoadAnswers502AndIsNotRetried) {
  TestCluster cluster;
  const fs::path dir = fs::path(cluster.dir()) / "fragile";
  fs::copy(fs::path(SHOAL_TEST_MODELS) / "bert-tiny-mean", dir, fs::copy_options::recursive);
  cluster.Register("id: t/fragile\nruntime: native\npath: " + dir.string() + "\n");
  fs::remove(dir / "tokenizer.json");  // broken after it was registered: no tokenizer
  fs::remove(dir / "vocab.txt");
  auto worker = cluster.StartWorker();
  auto gateway = cluster.StartGateway();

  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    HttpResult res = Encode(gateway->port(), "t/fragile");
    EXPECT_EQ(res.status, 502) << res.body;
    json err = json::parse(res.body, nullptr, false);
    EXPECT_EQ(err["error"]["code"], "MODEL_LOAD_FAILED") << res.body;
    EXPECT_NE(err["error"]["message"].get<std::string>().find("tokenizer.json"), std::string::npos) << res.body;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "an answer, not a timeout";
  }
  const auto view = worker->residency();
  EXPECT_EQ(view.load_failures, 1u) << "terminal: tried once";
  EXPECT_TRUE(Has(view.failed, "t/fragile"));
  EXPECT_EQ(cluster.WaitForEmptyStream(), 0u) << "acked, not circling";
}

TEST(Residency, AHotModelGainsAReplicaAsItsBacklogGrows) {
  TestCluster cluster;
  // 4 items per 100 ms batch: 40 items/s on one worker, so 300 items keep a
  // backlog above placement's kItemsPerExtraReplica for seconds.
  cluster.Register(IdentityProfile("t/hot", "pinned: false\nidentity: {memory_mb: 1, us_per_batch: 100000}\n"
                                            "batching: {max_batch_tokens: 16384, max_batch_requests: 4}\n"
                                            "queue: {ack_wait_ms: 30000, max_deliver: 5}\n"));
  cluster.Register(IdentityProfile("t/warm", "pinned: false\nidentity: {memory_mb: 1, us_per_batch: 100000}\n"
                                             "batching: {max_batch_tokens: 16384, max_batch_requests: 4}\n"));
  auto a = cluster.StartWorker();
  auto b = cluster.StartWorker();
  auto gateway = cluster.StartGateway();
  auto holders = [&](const std::string& model) {
    return Has(a->residency().resident, model) + Has(b->residency().resident, model);
  };
  std::string items;
  for (int i = 0; i < 100; ++i) items += std::string(i ? "," : "") + R"({"text":"item )" + std::to_string(i) + R"("})";

  // A small backlog: one replica.
  HttpClient http(gateway->port(), 60000);
  auto small = http.PostJson("/v1/encode/t/warm", R"({"items":[{"text":"a"},{"text":"b"},{"text":"c"}]})");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->status, 200);
  EXPECT_EQ(holders("t/warm"), 1);

  // 300 items waiting: a second replica.
  std::vector<std::future<HttpResult>> requests;
  for (int r = 0; r < 3; ++r) {
    requests.push_back(std::async(std::launch::async, [&] {
      HttpClient http(gateway->port(), 60000);
      auto res = http.PostJson("/v1/encode/t/hot", R"({"items":[)" + items + "]}", {{"X-Shoal-Timeout-Ms", "50000"}});
      return res.ok() ? *res : HttpResult{};
    }));
  }
  EXPECT_TRUE(WaitFor([&] { return holders("t/hot") == 2; }, std::chrono::seconds(15)))
      << "one replica while the backlog is small, two once it passes " << worker::kItemsPerExtraReplica;
  for (auto& r : requests) EXPECT_EQ(r.get().status, 200);
  EXPECT_GT(a->batch_totals().batches, 0u);
  EXPECT_GT(b->batch_totals().batches, 0u);
}

TEST(Residency, ThreeWorkersAgreeWhoLoadsAModelAndTheNextTakesOverWhenItDies) {
  TestCluster cluster;
  // Worker ids are fixed so the test knows the rendezvous order: pick a model
  // whose first choice is the worker that runs as a process (to be killed).
  const std::vector<std::string> ids = {"w-proc", "w-one", "w-two"};
  std::string model;
  for (int i = 0; model.empty(); ++i) {
    const std::string m = "t/placed-" + std::to_string(i);
    auto best = std::max_element(ids.begin(), ids.end(), [&](const auto& a, const auto& b) {
      return worker::RendezvousWeight(m, a) < worker::RendezvousWeight(m, b);
    });
    if (*best == "w-proc") model = m;
  }
  cluster.Register(Lazy(model));
  Subprocess proc = cluster.SpawnWorker({"--id", "w-proc"});
  worker::WorkerOptions o1, o2;
  o1.id = "w-one";
  o2.id = "w-two";
  auto one = cluster.StartWorkerWith(o1);
  auto two = cluster.StartWorkerWith(o2);
  auto gateway = cluster.StartGateway();
  auto registry = queue::WorkerRegistry::Open(cluster.control_plane().workers.get());
  ASSERT_TRUE(registry.ok());
  auto holders = [&] {
    std::vector<std::string> out;
    for (const auto& w : (*registry)->Live()) {
      if (Has(w.resident, model)) out.push_back(w.id);
    }
    return out;
  };
  ASSERT_TRUE(WaitFor([&] { return (*registry)->Live().size() == 3; }));

  for (int i = 0; i < 5; ++i) EXPECT_EQ(Encode(gateway->port(), model).status, 200);
  ASSERT_TRUE(WaitFor([&] { return holders().size() == 1; }));
  // The other two have each decided twice since: a load either chose shows.
  const uint64_t one_rounds = one->residency().placement_rounds;
  const uint64_t two_rounds = two->residency().placement_rounds;
  ASSERT_TRUE(WaitFor([&] {
    return one->residency().placement_rounds >= one_rounds + 2 && two->residency().placement_rounds >= two_rounds + 2;
  }));
  EXPECT_EQ(holders(), std::vector<std::string>{"w-proc"}) << "only the first in rank loaded it";
  for (const auto* w : {one.get(), two.get()}) {
    const auto view = w->residency();
    EXPECT_FALSE(Has(view.resident, model) || Has(view.loading, model)) << w->id();
  }

  proc.Stop(SIGKILL, std::chrono::milliseconds(0));
  // Requests keep being answered: once the dead worker's heartbeat is stale,
  // the next in rank loads the model.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Encode(gateway->port(), model, "after", 20000).status, 200);
  EXPECT_EQ(Has(one->residency().resident, model) + Has(two->residency().resident, model), 1);
}

}  // namespace
}  // namespace shoal::testing
