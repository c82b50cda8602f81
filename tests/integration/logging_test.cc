// Structured logs: a gateway and a worker run as processes with
// SHOAL_LOG_FORMAT=json and SHOAL_LOG_LEVEL=debug; every line they write is
// one JSON object, and one request's id is on every step of its path across
// both processes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "common/subprocess.h"
#include "support/http_client.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

// Every line of `path`, parsed; a line that is not one JSON object fails.
std::vector<nlohmann::json> JsonLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << path << ": not one JSON object per line: " << line;
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

// The messages of the lines with field rid == `rid`.
std::vector<std::string> LinesOf(const std::vector<nlohmann::json>& lines, const std::string& rid) {
  std::vector<std::string> out;
  for (const auto& j : lines) {
    if (j.value("rid", "") == rid) out.push_back(j.value("msg", ""));
  }
  return out;
}

bool AnyContains(const std::vector<std::string>& msgs, const std::string& part) {
  for (const auto& m : msgs) {
    if (m.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(StructuredLogs, OneRequestIdAcrossGatewayAndWorker) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/logged", "identity: {dim: 4}\n"));
  const std::vector<std::string> env = {"SHOAL_LOG_LEVEL=debug", "SHOAL_LOG_FORMAT=json"};
  const std::string worker_log = cluster.dir() + "/worker.json.log";
  const std::string gateway_log = cluster.dir() + "/gateway.json.log";
  auto worker = Subprocess::Spawn(
      {SHOAL_BINARY, "worker", "--nats", cluster.nats_url(), "--payload-store", cluster.payload_dir()}, worker_log,
      env);
  ASSERT_TRUE(worker.ok());
  cluster.WaitForWorkers("test/logged", 1);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  auto gateway = Subprocess::Spawn({SHOAL_BINARY, "gateway", "--nats", cluster.nats_url(), "--port",
                                    std::to_string(*port), "--payload-store", cluster.payload_dir()},
                                   gateway_log, env);
  ASSERT_TRUE(gateway.ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!PortAcceptsConnections(*port)) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "gateway did not start";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  HttpClient http(*port);
  auto ok = http.PostJson("/v1/embeddings", R"({"model":"test/logged","input":["a b","c"]})");
  ASSERT_TRUE(ok.ok() && ok->status == 200);
  const std::string rid = ok->Header("x-shoal-request-id");
  ASSERT_FALSE(rid.empty());
  auto missing = http.PostJson("/v1/embeddings", R"({"model":"no/such","input":"x"})");
  ASSERT_TRUE(missing.ok() && missing->status == 404);
  const std::string missing_rid = missing->Header("x-shoal-request-id");

  // Let the worker's lines reach the file, then stop both (their last lines
  // too must be whole objects).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  gateway->Stop(SIGTERM, std::chrono::seconds(10));
  worker->Stop(SIGTERM, std::chrono::seconds(15));

  const auto gw_lines = JsonLines(gateway_log);
  const auto wk_lines = JsonLines(worker_log);
  ASSERT_FALSE(gw_lines.empty());
  ASSERT_FALSE(wk_lines.empty());
  for (const auto& j : gw_lines) {
    EXPECT_TRUE(j.contains("ts") && j.contains("level") && j.contains("msg")) << j.dump();
  }
  const auto gw = LinesOf(gw_lines, rid);
  const auto wk = LinesOf(wk_lines, rid);
  EXPECT_TRUE(AnyContains(gw, "accepted path=/v1/embeddings model=test/logged items=2")) << ::testing::PrintToString(gw);
  EXPECT_TRUE(AnyContains(gw, "queued items=2")) << ::testing::PrintToString(gw);
  EXPECT_TRUE(AnyContains(gw, "answered path=/v1/embeddings status=200")) << ::testing::PrintToString(gw);
  EXPECT_TRUE(AnyContains(wk, "item=0 model=test/logged ran in a batch")) << ::testing::PrintToString(wk);
  EXPECT_TRUE(AnyContains(wk, "item=1 model=test/logged ran in a batch")) << ::testing::PrintToString(wk);
  // A refused request is answered with its id and its error code.
  const auto refused = LinesOf(gw_lines, missing_rid);
  EXPECT_TRUE(AnyContains(refused, "status=404 error=MODEL_NOT_FOUND")) << ::testing::PrintToString(refused);
}

}  // namespace
}  // namespace shoal::testing
