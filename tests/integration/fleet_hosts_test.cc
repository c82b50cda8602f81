// Models across machines: three hosts (network namespaces, each with its own
// nats-server of a 3-node JetStream cluster and its own directories). A
// model pushed from host A with `shoal models push` is served by workers on
// hosts B and C after A's copy is deleted; a file corrupted in B's cache is
// found when B loads the model again and fetched anew. Skipped, with the
// reason, where network namespaces are not available (not root).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "chaos/nats_cluster.h"
#include "common/subprocess.h"
#include "gateway/gateway.h"
#include "queue/control_plane.h"
#include "queue/worker_registry.h"
#include "support/files.h"
#include "support/gateway_calls.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using chaos::NetnsNatsCluster;
using nlohmann::json;

constexpr int kA = 0, kB = 1, kC = 2;
constexpr char kPushed[] = "fleet/pushed";
constexpr char kReference[] = "fleet/by-path";

class FleetHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = NetnsNatsCluster::WhyUnavailable(); !why.empty()) GTEST_SKIP() << why;
    dir_ = fs::temp_directory_path() / ("shoal-hosts-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    for (const char* host : {"a", "b", "c"}) fs::create_directories(dir_ / host);
    auto cluster = NetnsNatsCluster::Start((dir_ / "cluster").string());
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_ = std::move(cluster).value();
  }
  void TearDown() override {
    workers_.clear();
    cluster_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string Host(int node) const {
    return (dir_ / std::string(1, static_cast<char>('a' + node))).string();
  }

  // `shoal ARGS...` on `node` (or in the root namespace: -1), to its end.
  int Shoal(int node, std::vector<std::string> args, const std::string& log) {
    args.insert(args.begin(), SHOAL_BINARY);
    auto p = Subprocess::Spawn(node < 0 ? args : NetnsNatsCluster::OnHost(node, args), log);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return -1;
    WaitFor([&] { return !p->Running(); }, std::chrono::seconds(60));
    const int status = p->Stop(SIGKILL, std::chrono::milliseconds(0));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  void StartWorker(int node) {
    const std::string host = Host(node);
    auto p = Subprocess::Spawn(
        NetnsNatsCluster::OnHost(node, {SHOAL_BINARY, "worker", "--id", WorkerId(node), "--nats",
                                        cluster_->url(node), "--cache-dir", host + "/cache"}),
        host + "/worker.log");
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    workers_[node] = std::make_unique<Subprocess>(std::move(p).value());
  }
  void StopWorker(int node) {
    workers_[node]->Stop(SIGTERM, std::chrono::seconds(10));
    workers_.erase(node);
  }
  static std::string WorkerId(int node) {
    return std::string("host-") + static_cast<char>('a' + node);
  }

  // Until worker `node` has both models loaded.
  bool Loaded(queue::WorkerRegistry& registry, int node) {
    return WaitFor(
        [&] {
          for (const auto& w : registry.Live()) {
            if (w.id != WorkerId(node)) continue;
            const auto& r = w.resident;
            return std::find(r.begin(), r.end(), kPushed) != r.end() &&
                   std::find(r.begin(), r.end(), kReference) != r.end();
          }
          return false;
        },
        std::chrono::seconds(60));
  }

  fs::path dir_;
  std::unique_ptr<NetnsNatsCluster> cluster_;
  std::map<int, std::unique_ptr<Subprocess>> workers_;
};

// Both models' vectors for one text, as the gateway answers them.
std::pair<json, json> Embeddings(int port) {
  auto pushed = Call(port, "POST", "/v1/embeddings", Embed(kPushed, "fetched on another host"));
  auto reference =
      Call(port, "POST", "/v1/embeddings", Embed(kReference, "fetched on another host"));
  EXPECT_EQ(pushed.status, 200) << pushed.body;
  EXPECT_EQ(reference.status, 200) << reference.body;
  if (pushed.status != 200 || reference.status != 200) return {};
  return {json::parse(pushed.body)["data"], json::parse(reference.body)["data"]};
}

TEST_F(FleetHostsTest, APushedModelIsServedOnOtherHostsAndACorruptCacheIsMended) {
  // Host A pushes its copy, then deletes it.
  const std::string source = Host(kA) + "/models/tiny";
  fs::create_directories(source);
  fs::copy(kModels + "/bert-tiny-mean", source, fs::copy_options::recursive);
  ASSERT_EQ(Shoal(kA,
                  {"models", "--nats", cluster_->url(kA), "--replicas", "3", "push", source, "--id",
                   kPushed, "--pin"},
                  Host(kA) + "/push.log"),
            0)
      << FileText(Host(kA) + "/push.log");
  EXPECT_NE(FileText(Host(kA) + "/push.log").find("pushed " + source + " as sha256:"),
            std::string::npos);
  ASSERT_EQ(Shoal(kA, {"models", "--nats", cluster_->url(kA), "ls"}, Host(kA) + "/ls.log"), 0);
  const std::string listing = FileText(Host(kA) + "/ls.log");
  const size_t row = listing.find(kPushed);
  ASSERT_NE(row, std::string::npos) << listing;
  EXPECT_NE(listing.find("sha256:", row), std::string::npos) << listing;  // its files: the model store
  fs::remove_all(source);
  // The same bytes by path, as the reference its answers must match.
  const std::string profile = (dir_ / "reference.yaml").string();
  std::ofstream(profile) << "id: " << kReference << "\nruntime: native\npath: " << kModels
                         << "/bert-tiny-mean\npinned: true\n";
  ASSERT_EQ(Shoal(-1, {"models", "--nats", cluster_->urls(), "--replicas", "3", "add", profile},
                  Host(kA) + "/add.log"),
            0)
      << FileText(Host(kA) + "/add.log");

  auto control = queue::ControlPlane::Connect(cluster_->urls(), "fleet-hosts-test", {}, 3);
  ASSERT_TRUE(control.ok()) << control.status().ToString();
  auto registry = queue::WorkerRegistry::Open(control->workers.get());
  ASSERT_TRUE(registry.ok());
  gateway::GatewayOptions go;
  go.nats_url = cluster_->urls();
  go.http.port = 0;
  auto gateway = gateway::Gateway::Start(go);
  ASSERT_TRUE(gateway.ok()) << gateway.status().ToString();
  const int port = (*gateway)->port();

  StartWorker(kB);
  StartWorker(kC);
  ASSERT_TRUE(Loaded(**registry, kB)) << FileText(Host(kB) + "/worker.log");
  ASSERT_TRUE(Loaded(**registry, kC)) << FileText(Host(kC) + "/worker.log");
  const auto [both, expected] = Embeddings(port);
  EXPECT_EQ(both, expected);
  StopWorker(kB);  // C alone
  const auto [from_c, expected_c] = Embeddings(port);
  EXPECT_EQ(from_c, expected);
  StopWorker(kC);

  // B's cached weights go bad on disk; B loads the model again.
  std::string weights;
  for (const auto& f : fs::recursive_directory_iterator(Host(kB) + "/cache/models")) {
    if (f.path().filename() == "model.safetensors" &&
        f.path().parent_path().parent_path().filename() == "models") {
      weights = f.path().string();
    }
  }
  ASSERT_FALSE(weights.empty()) << "no cached weights on host B";
  {
    const char was = FileText(weights)[4096];
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    f.put(static_cast<char>(was ^ 0x20));
  }
  ASSERT_NE(FileText(weights), FileText(kModels + "/bert-tiny-mean/model.safetensors"));
  StartWorker(kB);
  ASSERT_TRUE(Loaded(**registry, kB)) << FileText(Host(kB) + "/worker.log");
  EXPECT_NE(FileText(Host(kB) + "/worker.log").find("is corrupt"), std::string::npos);
  EXPECT_EQ(FileText(weights), FileText(kModels + "/bert-tiny-mean/model.safetensors"));
  const auto [mended, expected_b] = Embeddings(port);
  EXPECT_EQ(mended, expected);
  (*gateway)->Drain(std::chrono::seconds(2));
}

}  // namespace
}  // namespace shoal::testing
