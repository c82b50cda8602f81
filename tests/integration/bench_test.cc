// `shoal bench` and RunSweep against a real cluster (nats-server, a pulling
// worker with the identity runtime, a gateway): a few short levels on a
// native route and on /v1/embeddings; the JSON report, the SVG, the knee's
// fields. No timing is asserted: only that the load was served.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "loadtest/mix.h"
#include "loadtest/sweep.h"
#include "support/run_command.h"
#include "support/files.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

// `shoal <args>`: the exit status and stdout (stderr, the progress, to a file
// that a failure prints).
std::pair<int, std::string> Shoal(const std::string& args, const std::string& stderr_path) {
  const std::string cmd =
      "timeout 120 " + std::string(SHOAL_BINARY) + " " + args + " 2>" + stderr_path;
  return RunCommand(cmd);
}

class Bench : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TestCluster();
    cluster_->Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
    worker_ = cluster_->StartWorker().release();
    cluster_->WaitForWorkers("test/embed", 1);
    gateway_ = cluster_->StartGateway().release();
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    delete cluster_;
  }
  static std::string Url() { return "http://127.0.0.1:" + std::to_string(gateway_->port()); }

  // The report's shape, and that the cluster served the load.
  static void CheckReport(const json& report, size_t levels, const char* loop) {
    EXPECT_EQ(report["tool"], "shoal bench");
    EXPECT_EQ(report["loop"], loop);
    ASSERT_EQ(report["levels"].size(), levels) << report.dump(2);
    for (const auto& l : report["levels"]) {
      for (const char* f :
           {"offered", "throughput_rps", "tokens_per_s", "output_tokens_per_s", "tokens_estimated",
            "p50_ms", "p95_ms", "p99_ms", "ok", "errors", "error_fraction", "status_counts"}) {
        EXPECT_TRUE(l.contains(f)) << f;
      }
      EXPECT_GT(l["throughput_rps"].get<double>(), 0) << l.dump();
      EXPECT_GT(l["ok"].get<uint64_t>(), 0u);
      EXPECT_GT(l["tokens_per_s"].get<double>(), 0) << "the gateway reports usage";
      EXPECT_FALSE(l["tokens_estimated"].get<bool>());
      EXPECT_TRUE(l["status_counts"].contains("200"));
    }
    const json& knee = report["knee"];
    for (const char* f :
         {"found", "index", "offered", "throughput_rps", "p50_ms", "p99_ms", "reason"}) {
      EXPECT_TRUE(knee.contains(f)) << f << " in " << knee.dump();
    }
    EXPECT_LT(knee["index"].get<size_t>(), levels);
    EXPECT_FALSE(report["tokens_estimated"].get<bool>());
  }

  static void CheckSvg(const std::string& svg) {
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
    EXPECT_NE(svg.find("<polyline"), std::string::npos);
    EXPECT_EQ(svg.find("nan"), std::string::npos);
  }

  static TestCluster* cluster_;
  static worker::Worker* worker_;
  static gateway::Gateway* gateway_;
};

TestCluster* Bench::cluster_ = nullptr;
worker::Worker* Bench::worker_ = nullptr;
gateway::Gateway* Bench::gateway_ = nullptr;

TEST_F(Bench, ClosedLoopOnANativeRoute) {
  const std::string dir = cluster_->dir();
  auto [rc, out] = Shoal("bench --url " + Url() +
                             " --route encode --model test/embed --text-words 3-6 --items 2" +
                             " --levels 1,2,4 --duration 0.3 --warmup 0.1 --out " + dir +
                             "/encode.json --svg " + dir + "/encode.svg",
                         dir + "/encode.err");
  ASSERT_EQ(rc, 0) << out << FileText(dir + "/encode.err");
  EXPECT_NE(out.find("THROUGHPUT/S"), std::string::npos) << out;
  EXPECT_NE(out.find("knee:"), std::string::npos) << out;
  EXPECT_EQ(out.find("level 1/3"), std::string::npos) << "progress goes to stderr, never stdout";
  EXPECT_NE(FileText(dir + "/encode.err").find("level 1/3"), std::string::npos);

  const json report = json::parse(FileText(dir + "/encode.json"));
  CheckReport(report, 3, "closed");
  EXPECT_EQ(report["options"]["routes"], json::array({"/v1/encode/test/embed"}));
  EXPECT_EQ(report["levels"][2]["offered"], 4);
  CheckSvg(FileText(dir + "/encode.svg"));
}

TEST_F(Bench, OpenLoopOnEmbeddingsFromARecordedMix) {
  const std::string dir = cluster_->dir();
  {
    std::ofstream mix(dir + "/mix.jsonl");
    mix << R"({"path": "/v1/embeddings", "body": {"model": "test/embed", "input": "one two three"}, "weight": 2})"
        << "\n"
        << R"({"path": "/v1/embeddings", "body": {"model": "test/embed", "input": ["four five", "six"]}})"
        << "\n";
  }
  auto [rc, out] = Shoal(
      "bench --url " + Url() + " --mix " + dir + "/mix.jsonl --loop open --levels 20,40" +
          " --duration 0.3 --warmup 0.1 --out " + dir + "/open.json --svg " + dir + "/open.svg",
      dir + "/open.err");
  ASSERT_EQ(rc, 0) << out << FileText(dir + "/open.err");
  const json report = json::parse(FileText(dir + "/open.json"));
  CheckReport(report, 2, "open");
  EXPECT_EQ(report["options"]["routes"], json::array({"/v1/embeddings"}));
  EXPECT_EQ(report["options"]["mix"]["entries"], 2);
  CheckSvg(FileText(dir + "/open.svg"));
}

TEST_F(Bench, RunSweepOnEmbeddings) {
  loadtest::GeneratedMix g;
  g.route = loadtest::Route::kEmbeddings;
  g.model = "test/embed";
  g.min_words = 2;
  g.max_words = 5;
  auto mix = loadtest::GenerateMix(g);
  ASSERT_TRUE(mix.ok());
  loadtest::Target target;
  target.port = gateway_->port();
  target.mix = *mix;
  loadtest::SweepOptions o;
  o.levels = {1, 3};
  o.warmup = std::chrono::milliseconds(100);
  o.duration = std::chrono::milliseconds(300);
  std::vector<loadtest::SweepProgress> finished;
  o.progress = [&](const loadtest::SweepProgress& p) {
    if (p.finished) finished.push_back(p);
  };
  auto report = loadtest::RunSweep(target, o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->levels.size(), 2u);
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[1].level_index, 1u);
  for (const auto& l : report->levels) {
    EXPECT_GT(l.throughput_rps, 0);
    EXPECT_GT(l.tokens_per_s, 0);
    EXPECT_EQ(l.errors, 0u);
    EXPECT_LE(l.p50_ms, l.p99_ms);
  }
  EXPECT_LT(report->knee.index, 2u);
  EXPECT_FALSE(report->knee.reason.empty());
}

TEST_F(Bench, AWrongModelOrAnUnreachableServerFailsBeforeAnyLevel) {
  loadtest::Target target;
  target.port = gateway_->port();
  target.mix = {{"/v1/embeddings", "application/json", R"({"model":"no/such","input":"x"})", 1, 1}};
  loadtest::SweepOptions o;
  o.levels = {1};
  auto report = loadtest::RunSweep(target, o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("/v1/embeddings"), std::string::npos)
      << report.status().ToString();
  EXPECT_NE(report.status().message().find("404"), std::string::npos) << report.status().ToString();

  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  target.port = *port;
  report = loadtest::RunSweep(target, o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("127.0.0.1:" + std::to_string(*port)), std::string::npos)
      << report.status().ToString();

  auto [rc, out] =
      Shoal("bench --url https://127.0.0.1:1 --model m", cluster_->dir() + "/https.err");
  EXPECT_NE(rc, 0);
  EXPECT_NE(FileText(cluster_->dir() + "/https.err").find("HTTP"), std::string::npos);
}

}  // namespace
}  // namespace shoal::testing
