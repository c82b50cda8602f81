// What autoscalers read (gateway/queue_gauges.h): a backlog held in the work
// stream — its only worker frozen with SIGSTOP, so nothing is acked — shows
// on nats-server's monitoring endpoint exactly as KEDA's nats-jetstream
// scaler computes a consumer's lag (GET /jsz?acc=$G&consumers=true&config=true,
// then num_pending + num_ack_pending of the named consumer), and on the
// gateway's /metrics as the model's queued items with the age of the oldest;
// both fall back to zero once the worker runs again and answers them all.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "queue/subjects.h"
#include "support/gateway_calls.h"
#include "support/http_client.h"
#include "support/metrics_text.h"
#include "support/test_cluster.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

constexpr char kModel[] = "auto/embed";

// The lag KEDA's nats-jetstream scaler reads for `consumer` of `stream`, as
// it reads it; -1 when the consumer is not there.
int64_t KedaLag(int monitoring_port, const std::string& stream, const std::string& consumer) {
  // curl, an HTTP client as the scaler's (the page comes chunked).
  const std::string cmd = "curl -sf 'http://127.0.0.1:" + std::to_string(monitoring_port) +
                          "/jsz?acc=$G&consumers=true&config=true'";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::string body;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) body.append(buf, n);
  if (pclose(p) != 0) return -1;
  const json jsz = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!jsz.is_object() || !jsz.contains("account_details")) return -1;
  for (const auto& account : jsz["account_details"]) {
    if (account.value("name", "") != "$G" || !account.contains("stream_detail")) continue;
    for (const auto& s : account["stream_detail"]) {
      if (s.value("name", "") != stream || !s.contains("consumer_detail")) continue;
      for (const auto& c : s["consumer_detail"]) {
        if (c.value("name", "") == consumer)
          return c.value("num_pending", 0) + c.value("num_ack_pending", 0);
      }
    }
  }
  return -1;
}

TEST(Autoscaling, TheBacklogShowsWhereAutoscalersReadIt) {
  TestCluster cluster;
  auto gateway = cluster.StartGateway();
  const int port = gateway->port();
  const auto registered =
      Call(port, "POST", "/v1/admin/models",
           json{{"spec", {{"id", kModel}, {"runtime", "identity"}, {"pinned", true}}}}.dump());
  ASSERT_EQ(registered.status, 201) << registered.body;
  const std::string stream = queue::WorkStreamName("default");
  const std::string consumer = queue::ConsumerName(kModel);
  // Registration made the consumer: the scaler finds it before any worker.
  EXPECT_EQ(KedaLag(cluster.nats_monitoring_port(), stream, consumer), 0);

  Subprocess worker = cluster.SpawnWorker({"--model", kModel});
  cluster.WaitForWorkers(kModel, 1);
  ASSERT_EQ(Call(port, "POST", "/v1/embeddings", Embed(kModel)).status, 200);
  // The worker acks after it answers: frozen before that ack, its message
  // would stay in the backlog counted below.
  ASSERT_TRUE(WaitFor([&] {
    return cluster.StreamMessages() == 0 && KedaLag(cluster.nats_monitoring_port(), stream, consumer) == 0;
  }));

  // Frozen: its heartbeat is still fresh for a few seconds, so the gateway
  // queues what comes now, and nothing is acked.
  worker.Signal(SIGSTOP);
  constexpr int kQueued = 6;
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  // However the test ends, the worker runs again and the clients are joined.
  struct Thaw {
    Subprocess& worker;
    std::vector<std::thread>& clients;
    ~Thaw() {
      worker.Signal(SIGCONT);
      for (auto& c : clients) {
        if (c.joinable()) c.join();
      }
    }
  } thaw{worker, clients};
  for (int i = 0; i < kQueued; ++i) {
    clients.emplace_back([&, i] {
      HttpClient http(port, 60000);
      auto r = http.PostJson("/v1/embeddings", Embed(kModel, "queued " + std::to_string(i)));
      if (r.ok() && r->status == 200) answered.fetch_add(1);
    });
  }
  ASSERT_TRUE(
      WaitFor([&] { return cluster.StreamMessages() == kQueued; }, std::chrono::seconds(10)))
      << cluster.StreamMessages() << " in the stream";
  EXPECT_EQ(KedaLag(cluster.nats_monitoring_port(), stream, consumer), kQueued);
  const std::string series =
      "shoal_queue_items{pool=\"default\",model=\"auto/embed\",priority=\"interactive\"}";
  std::string metrics;
  ASSERT_TRUE(WaitFor(
      [&] {
        metrics = Call(port, "GET", "/metrics").body;
        return MetricValue(metrics, series).value_or(-1) == kQueued;
      },
      std::chrono::seconds(10)))
      << metrics;
  EXPECT_GT(
      MetricValue(metrics,
                  "shoal_queue_oldest_item_age_seconds{pool=\"default\",model=\"auto/embed\"}")
          .value_or(-1),
      0);
  EXPECT_EQ(MetricValue(metrics, "shoal_pool_queue_items{pool=\"default\"}").value_or(-1), kQueued);
  EXPECT_EQ(MetricValue(metrics, "shoal_pool_workers{pool=\"default\"}").value_or(-1), 1);

  worker.Signal(SIGCONT);
  for (auto& c : clients) c.join();
  EXPECT_EQ(answered.load(), kQueued);
  ASSERT_TRUE(
      WaitFor([&] { return KedaLag(cluster.nats_monitoring_port(), stream, consumer) == 0; }));
  ASSERT_TRUE(WaitFor([&] {
    metrics = Call(port, "GET", "/metrics").body;
    return MetricValue(metrics, series).value_or(-1) == 0;
  })) << metrics;
  EXPECT_EQ(
      MetricValue(metrics,
                  "shoal_queue_oldest_item_age_seconds{pool=\"default\",model=\"auto/embed\"}")
          .value_or(-1),
      0);
}

}  // namespace
}  // namespace shoal::testing
