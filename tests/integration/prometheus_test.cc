// The metrics pages against the tools that read them: a worker's GET
// /metrics after real traffic, both pages through `promtool check metrics`,
// and a real Prometheus scraping a running gateway and worker.
//
// promtool and prometheus come from Debian's `prometheus` package, which
// scripts/setup installs; the tests that need them skip without them.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/subprocess.h"
#include "support/files.h"
#include "support/http_client.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

bool OnPath(const std::string& tool) { return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0; }

// A gateway and a worker (with its metrics port) on the identity model, and
// `requests` embeddings requests of two inputs each already answered.
struct Fleet {
  TestCluster cluster;
  std::unique_ptr<worker::Worker> worker;
  std::unique_ptr<gateway::Gateway> gateway;

  explicit Fleet(int requests) {
    cluster.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
    worker::WorkerOptions o;
    o.metrics_port = 0;
    worker = cluster.StartWorkerWith(std::move(o));
    cluster.WaitForWorkers("test/embed", 1);
    gateway = cluster.StartGateway();
    HttpClient http(gateway->port());
    for (int i = 0; i < requests; ++i) {
      auto res = http.PostJson("/v1/embeddings", R"({"model":"test/embed","input":["one two","three"]})");
      EXPECT_TRUE(res.ok() && res->status == 200);
    }
  }

  std::string Scrape(int port) {
    auto res = HttpClient(port).Get("/metrics");
    EXPECT_TRUE(res.ok() && res->status == 200);
    return res.ok() ? res->body : "";
  }
};

TEST(WorkerMetrics, CountsBatchesStagesAndResidency) {
  Fleet fleet(5);
  ASSERT_TRUE(fleet.worker && fleet.gateway);
  ASSERT_GT(fleet.worker->metrics_port(), 0);
  auto scrape = HttpClient(fleet.worker->metrics_port()).Get("/metrics");
  ASSERT_TRUE(scrape.ok());
  EXPECT_EQ(scrape->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = scrape->body;
  for (const char* line : {
           "# TYPE shoal_worker_batches_total counter\n",
           "shoal_worker_items_total{model=\"test/embed\",outcome=\"succeeded\"} 10\n",
           "shoal_worker_stage_seconds_count{model=\"test/embed\",stage=\"queue\"} 10\n",
           "shoal_worker_local_queue_items{model=\"test/embed\"} 0\n",
           "shoal_worker_models{state=\"resident\"} 1\n",
           "shoal_worker_models{state=\"loading\"} 0\n",
           "shoal_worker_model_loads_total{model=\"test/embed\",result=\"ok\"} 1\n",
           "shoal_worker_model_load_seconds_count{model=\"test/embed\"} 1\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
  // Batches: at least one, at most one per item; every batch has a
  // tokenize and an inference observation.
  auto value = [&](const std::string& series) {
    const size_t at = text.find(series + " ");
    return at == std::string::npos ? -1.0 : std::atof(text.c_str() + at + series.size() + 1);
  };
  const double batches = value("shoal_worker_batches_total{model=\"test/embed\"}");
  EXPECT_GE(batches, 1);
  EXPECT_LE(batches, 10);
  EXPECT_EQ(value("shoal_worker_batch_items_count{model=\"test/embed\"}"), batches);
  EXPECT_EQ(value("shoal_worker_batch_items_sum{model=\"test/embed\"}"), 10);
  EXPECT_EQ(value("shoal_worker_stage_seconds_count{model=\"test/embed\",stage=\"tokenize\"}"), batches);
  EXPECT_EQ(value("shoal_worker_stage_seconds_count{model=\"test/embed\",stage=\"inference\"}"), batches);
  EXPECT_GT(value("shoal_worker_memory_bytes{device=\"cpu\",kind=\"budget\"}"), 0);
  // The probes orchestrators use, and anything else a documented 404.
  for (const char* probe : {"/healthz", "/readyz"}) {
    auto r = HttpClient(fleet.worker->metrics_port()).Get(probe);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200) << probe;
  }
  auto other = HttpClient(fleet.worker->metrics_port()).Get("/v1/encode/test/embed");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->status, 404);
}

TEST(Prometheus, PromtoolAcceptsBothPages) {
  if (!OnPath("promtool")) GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/setup)";
  Fleet fleet(3);
  ASSERT_TRUE(fleet.worker && fleet.gateway);
  // An error response too, so the error families have series.
  ASSERT_TRUE(HttpClient(fleet.gateway->port()).PostJson("/v1/embeddings", R"({"model":"no/such","input":"x"})").ok());
  for (int port : {fleet.gateway->port(), fleet.worker->metrics_port()}) {
    const std::string page = fleet.cluster.dir() + "/page-" + std::to_string(port) + ".txt";
    std::ofstream(page) << fleet.Scrape(port);
    const std::string out = page + ".promtool";
    // promtool reads the page on stdin; a lint problem or a parse error is a
    // non-zero exit and a line naming it.
    const int rc = std::system(("promtool check metrics < " + page + " > " + out + " 2>&1").c_str());
    EXPECT_EQ(rc, 0) << "promtool on port " << port << ":\n" << FileText(out) << "\npage:\n" << FileText(page);
  }
}

TEST(Prometheus, ScrapesARunningCluster) {
  if (!OnPath("prometheus")) GTEST_SKIP() << "prometheus not installed (Debian package prometheus; scripts/setup)";
  Fleet fleet(3);
  ASSERT_TRUE(fleet.worker && fleet.gateway);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string dir = fleet.cluster.dir() + "/prometheus";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/prometheus.yml") << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                                            "scrape_configs:\n"
                                            "  - job_name: shoal-gateway\n"
                                            "    static_configs: [{targets: ['127.0.0.1:"
                                         << fleet.gateway->port()
                                         << "']}]\n"
                                            "  - job_name: shoal-worker\n"
                                            "    static_configs: [{targets: ['127.0.0.1:"
                                         << fleet.worker->metrics_port() << "']}]\n";
  auto prometheus = Subprocess::Spawn({"prometheus", "--config.file=" + dir + "/prometheus.yml",
                                       "--storage.tsdb.path=" + dir + "/data",
                                       "--web.listen-address=127.0.0.1:" + std::to_string(*port)},
                                      dir + "/prometheus.log");
  ASSERT_TRUE(prometheus.ok()) << prometheus.status().ToString();

  // Both targets up, and a series of each queried back through PromQL.
  HttpClient api(*port, 5000);
  bool gateway_seen = false, worker_seen = false, both_up = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && !(gateway_seen && worker_seen && both_up)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    if (!PortAcceptsConnections(*port)) continue;
    auto up = api.Get("/api/v1/query?query=sum(up)");
    both_up = up.ok() && up->status == 200 && up->body.find("\"2\"]") != std::string::npos;
    auto g = api.Get("/api/v1/query?query=shoal_gateway_requests_total%7Broute%3D%22%2Fv1%2Fembeddings%22%7D");
    gateway_seen = g.ok() && g->status == 200 && g->body.find("\"job\":\"shoal-gateway\"") != std::string::npos;
    auto w = api.Get("/api/v1/query?query=shoal_worker_items_total%7Boutcome%3D%22succeeded%22%7D");
    worker_seen = w.ok() && w->status == 200 && w->body.find("\"value\":[") != std::string::npos &&
                  w->body.find("\"6\"]") != std::string::npos;
  }
  EXPECT_TRUE(both_up) << "targets:\n" << (api.Get("/api/v1/targets").ok() ? api.Get("/api/v1/targets")->body : "")
                       << "\nlog:\n" << FileText(dir + "/prometheus.log");
  EXPECT_TRUE(gateway_seen);
  EXPECT_TRUE(worker_seen);
  prometheus->Stop(SIGTERM, std::chrono::seconds(5));
}

}  // namespace
}  // namespace shoal::testing
