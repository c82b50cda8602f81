// Faults: a worker killed mid-batch, clients that hang up, heartbeats that
// hang, and a clean Ctrl-C of the all-in-one cluster.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "queue/nats.h"
#include "runtime/identity/identity_runtime.h"
#include "support/http_client.h"
#include "support/identity_clients.h"
#include "support/in_flight_probe.h"
#include "support/metrics_text.h"
#include "support/test_cluster.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

TEST(Faults, WorkerKilledMidLoadLosesNothing) {
  TestCluster cluster;
  // 20 ms per batch of up to 4, AckWait 1 s: a killed worker's batches come
  // back to the queue within about a second.
  cluster.Register(IdentityProfile("test/embed",
                                   "identity: {dim: 8, us_per_batch: 20000}\n"
                                   "batching: {max_batch_requests: 4}\n"));
  Subprocess victim = cluster.SpawnWorker({"--id", "victim"});
  auto probe = InFlightProbe::Start(cluster.nats_url(), "victim");
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  Subprocess survivor = cluster.SpawnWorker();
  cluster.WaitForWorkers("test/embed", 2);
  gateway::GatewayOptions o;
  o.default_timeout = std::chrono::seconds(30);
  auto gateway = cluster.StartGateway(o);
  ASSERT_TRUE(gateway);

  IdentityClients clients(gateway->port(), "test/embed", 12, 25);
  // Kill one worker while it provably holds items nobody has answered (so
  // "some were redelivered" below cannot flake when, at a blind moment, the
  // survivor happened to hold everything): freeze it, let what it already
  // sent arrive, and check with the probe; if it held nothing, thaw and retry.
  while (clients.done() < clients.total() / 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  bool killed = false;
  while (!killed && clients.done() < clients.total()) {
    if ((*probe)->Held() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    victim.Signal(SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if ((*probe)->Held() > 0) {
      victim.Signal(SIGKILL);
      killed = true;
    } else {
      victim.Signal(SIGCONT);
    }
  }
  clients.Join();
  ASSERT_TRUE(killed) << "the victim never held an unanswered item (it was delivered "
                      << (*probe)->Delivered() << ")";

  EXPECT_TRUE(clients.failures().empty()) << clients.failures().size() << " failed, e.g. "
                                          << clients.failures().front();
  EXPECT_EQ(clients.correct(), clients.total()) << "every request answered, correctly";
  EXPECT_GT(clients.retried(), 0) << "some items were redelivered after the kill";
  EXPECT_EQ(cluster.WaitForEmptyStream(), 0u) << "every item acknowledged in the end";
  survivor.Stop(SIGTERM, std::chrono::seconds(15));
}

// What became of five abandoned requests, once the worker has settled all
// five: how many ran, and how many it dropped unrun (by outcome).
struct Abandoned {
  double ran = 0, expired = 0, cancelled = 0;
};

// Five clients send a request for a model whose batches (one item each)
// take 2 s, with deadline `timeout_ms`, and hang up at once.
Abandoned AbandonFiveSlowRequests(int timeout_ms) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/slow",
                                   "identity: {dim: 8, us_per_batch: 2000000}\n"
                                   "batching: {max_batch_requests: 1}\n"
                                   "queue: {ack_wait_ms: 5000, max_deliver: 5}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/slow", 1);
  auto gateway = cluster.StartGateway();
  EXPECT_TRUE(gateway);
  if (!gateway) return {};
  const std::string body = R"({"items":[{"text":"abandoned"}]})";
  for (int i = 0; i < 5; ++i) {
    HttpClient::SendAndHangUp(gateway->port(),
                              "POST /v1/encode/test/slow HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/json\r\nX-Shoal-Timeout-Ms: " +
                                  std::to_string(timeout_ms) + "\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  Abandoned a;
  auto count = [&](const char* outcome) {
    return MetricValue(worker->RenderMetrics(),
                       std::string("shoal_worker_items_total{model=\"test/slow\",outcome=\"") + outcome + "\"}")
        .value_or(0);
  };
  // Every item reached the worker and was settled: nothing is still on its way.
  EXPECT_TRUE(WaitFor([&] {
    a = {count("succeeded"), count("expired"), count("cancelled")};
    return a.ran + a.expired + a.cancelled == 5;
  })) << a.ran << " ran, " << a.expired << " expired, " << a.cancelled << " cancelled";
  EXPECT_EQ(cluster.WaitForEmptyStream(), 0u);
  return a;
}

TEST(Faults, ClientsThatHangUpDoNotLeaveWorkRunning) {
  // A 300 ms deadline: the first item may start before it and runs its 2 s;
  // the others are dropped unrun (expired in the queue, or cancelled by the
  // hang-up, whichever the worker sees first).
  const Abandoned a = AbandonFiveSlowRequests(300);
  EXPECT_LE(a.ran, 1) << "expired work was dropped, not run";
}

TEST(Faults, ClientsThatHangUpHaveTheirWaitingItemsDroppedBeforeTheirDeadline) {
  // A 60 s deadline: only the cancellation the gateway sends when a client
  // hangs up keeps the last four from running.
  const Abandoned a = AbandonFiveSlowRequests(60000);
  EXPECT_LE(a.ran, 1) << "cancelled work was dropped, not run";
  EXPECT_GE(a.cancelled, 4) << "dropped as cancelled, not expired";
}

TEST(Faults, AnItemJetStreamGivesUpOnIsAnErrorAndADeadLetter) {
  TestCluster cluster;
  // One delivery allowed; each batch takes 3 s (kept alive by +WPI while its
  // worker lives). Killing the worker mid-batch exhausts MaxDeliver.
  cluster.Register(IdentityProfile("test/poison", "identity: {dim: 8, us_per_batch: 3000000}\n"
                                                  "queue: {ack_wait_ms: 500, max_deliver: 1}\n"));
  Subprocess worker = cluster.SpawnWorker({"--id", "poisoned"});
  auto probe = InFlightProbe::Start(cluster.nats_url(), "poisoned");
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  cluster.WaitForWorkers("test/poison", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  // The worker dies holding the item (the probe sees it delivered and not
  // settled); a worker that pulls afterwards makes JetStream notice the item
  // is out of deliveries.
  std::unique_ptr<worker::Worker> next;
  std::thread killer([&] {
    EXPECT_TRUE(WaitFor([&] { return (*probe)->Held() > 0; })) << "the item never reached the worker";
    worker.Signal(SIGKILL);
    next = cluster.StartWorker();
  });
  HttpClient http(gateway->port());
  const auto t0 = std::chrono::steady_clock::now();
  auto res = http.PostJson("/v1/encode/test/poison", R"({"items":[{"text":"poison"}]})");
  killer.join();
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 500) << res->body;
  auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["error"]["code"], "INFERENCE_ERROR");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("SHOAL_DLQ"), std::string::npos) << res->body;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << "an error, not a timeout";
  EXPECT_EQ(cluster.WaitForEmptyStream(), 0u) << "out of the work queue";
  EXPECT_EQ(cluster.StreamMessagesNamed("SHOAL_DLQ"), 1u) << "kept for inspection";
}

// A worker keeps its long items alive whatever its control plane does: with
// its heartbeat writes hanging (their bucket gone and a silent listener on
// its subjects, so each waits out the 5 s JetStream timeout, as while a
// cluster elects a leader), a 3 s batch under a 1 s ack wait still gets its
// +WPI (in progress) acks every half ack wait, and is answered.
TEST(Faults, AWorkerWhoseHeartbeatsHangStillKeepsItsItemsAlive) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/slow", "identity: {dim: 8, us_per_batch: 3000000}\n"
                                                "queue: {ack_wait_ms: 1000, max_deliver: 5}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/slow", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);

  auto nc = queue::Connect({.url = cluster.nats_url(), .name = "heartbeat and ack listener"});
  ASSERT_TRUE(nc.ok()) << nc.status().ToString();
  natsSubscription* silent = nullptr;  // hears heartbeat writes, answers none
  natsSubscription* acks = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&silent, nc->get(), "$KV.shoal_workers.>"), NATS_OK);
  ASSERT_EQ(natsConnection_SubscribeSync(&acks, nc->get(), "$JS.ACK.>"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc->get()), NATS_OK);
  jsErrCode code{};
  ASSERT_EQ(js_DeleteStream(cluster.control_plane().js.get(), "KV_shoal_workers", nullptr, &code), NATS_OK);
  natsMsg* hanging = nullptr;  // a heartbeat write that nothing will answer
  ASSERT_EQ(natsSubscription_NextMsg(&hanging, silent, 5000), NATS_OK);
  natsMsg_Destroy(hanging);

  HttpClient http(gateway->port());
  auto res = http.PostJson("/v1/encode/test/slow", R"({"items":[{"text":"slow"}]})");
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;
  int in_progress = 0;
  for (natsMsg* m = nullptr; natsSubscription_NextMsg(&m, acks, 100) == NATS_OK; natsMsg_Destroy(m)) {
    in_progress += std::string_view(natsMsg_GetData(m), natsMsg_GetDataLength(m)) == "+WPI";
  }
  EXPECT_GE(in_progress, 3) << "a 3 s batch, +WPI every 0.5 s";
  natsSubscription_Destroy(acks);
  natsSubscription_Destroy(silent);
}

TEST(Faults, ANatsServerRestartLosesNoAcceptedRequest) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/embed", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  auto before = http.PostJson("/v1/embeddings", R"({"model":"test/embed","input":"before"})");
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->status, 200);

  cluster.StopNats();
  // Sent while the server is down: the gateway holds the publish until it
  // reconnects, the worker re-issues its pull requests, the answer comes.
  Result<HttpResult> during = Internal("not sent");
  std::thread client([&] {
    HttpClient h(gateway->port());
    during = h.PostJson("/v1/embeddings", R"({"model":"test/embed","input":"during"})",
                        {{"X-Shoal-Timeout-Ms", "20000"}});
  });
  // The gateway has taken it while the server is down (its /metrics needs no NATS).
  EXPECT_TRUE(WaitFor([&] {
    auto page = http.Get("/metrics");
    return page.ok() && MetricValue(page->body, "shoal_gateway_in_flight") == 1;
  })) << "the request never reached the gateway";
  cluster.StartNats();
  client.join();
  ASSERT_TRUE(during.ok()) << during.status().ToString();
  EXPECT_EQ(during->status, 200) << during->body;
  auto v = nlohmann::json::parse(during->body)["data"][0]["embedding"].get<std::vector<float>>();
  EXPECT_EQ(v, IdentityVector(IdentityTokens("during"), 8, true));

  auto after = http.PostJson("/v1/embeddings", R"({"model":"test/embed","input":"after"})");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200) << after->body;
}

TEST(Faults, ShoalUpDrainsAndStopsEverythingOnCtrlC) {
  char tmpl[] = "/tmp/shoal-up-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto http_port = FreeLoopbackPort();
  auto nats_port = FreeLoopbackPort();
  ASSERT_TRUE(http_port.ok() && nats_port.ok());
  auto up = Subprocess::Spawn({SHOAL_BINARY, "up", "--port", std::to_string(*http_port), "--nats-port",
                               std::to_string(*nats_port), "--data-dir", dir + "/var",
                               "--models-dir", std::string(SHOAL_SOURCE_DIR) + "/models"},
                              dir + "/up.log");
  ASSERT_TRUE(up.ok());
  HttpClient http(*http_port);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    auto ready = http.Get("/readyz");
    if (ready.ok() && ready->status == 200) break;
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "shoal up did not become ready";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // The bundled default model answers (until a worker appears, it waits).
  Result<HttpResult> res = Internal("no request");
  for (int i = 0; i < 50; ++i) {
    res = http.PostJson("/v1/embeddings", R"({"model":"shoal/identity","input":"hello"})");
    if (res.ok() && res->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;

  up->Signal(SIGINT);
  const auto stop_until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (up->Running() && std::chrono::steady_clock::now() < stop_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(up->Running()) << "shoal up did not stop on SIGINT";
  EXPECT_FALSE(PortAcceptsConnections(*nats_port)) << "the nats-server it started is gone";
  EXPECT_FALSE(PortAcceptsConnections(*http_port));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace shoal::testing
