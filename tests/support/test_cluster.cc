#include "support/test_cluster.h"

#include <algorithm>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "queue/catalog_watch.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"
#include "runtime/runtime.h"
#include "queue/subjects.h"
#include "runtime/registry/registry.h"

namespace shoal::testing {

std::string IdentityProfile(const std::string& id, const std::string& extra) {
  std::string yaml = "id: " + id + "\nruntime: identity\nmax_input_tokens: 64\n";
  if (extra.find("queue:") == std::string::npos) yaml += "queue: {ack_wait_ms: 1000, max_deliver: 5}\n";
  if (extra.find("pinned:") == std::string::npos) yaml += "pinned: true\n";
  return yaml + extra;
}

queue::NatsServerOptions TestCluster::ServerOptions(int port, int monitoring_port) const {
  return {.data_dir = dir_ + "/nats",
          .port = port,
          .tls_cert_file = secure_.tls_cert_file,
          .tls_key_file = secure_.tls_key_file,
          .users = secure_.users,
          .monitoring_port = monitoring_port};
}

TestCluster::TestCluster(SecureNats secure) : secure_(std::move(secure)) {
  // Runtime processes of in-process workers (and registration's checks)
  // are the shoal binary's `runtime-host`, not this test binary.
  setenv("SHOAL_RUNTIME_HOST", SHOAL_BINARY, 0);
  char tmpl[] = "/tmp/shoal-test-XXXXXX";
  dir_ = mkdtemp(tmpl);
  auto nats = queue::NatsServer::Start(ServerOptions(0, 0));
  if (!nats.ok()) {
    ADD_FAILURE() << nats.status().ToString();
    return;
  }
  nats_ = std::move(nats).value();
  url_ = nats_->url();
  auto control = queue::ControlPlane::Connect(url_, "test", secure_.client);
  if (!control.ok()) {
    ADD_FAILURE() << control.status().ToString();
    return;
  }
  control_ = std::move(control).value();
}

void TestCluster::StopNats() {
  control_ = {};
  nats_->Stop();
}

void TestCluster::StartNats() {
  auto nats = queue::NatsServer::Start(ServerOptions(nats_->port(), nats_->monitoring_port()));
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  nats_ = std::move(nats).value();
  auto control = queue::ControlPlane::Connect(url_, "test", secure_.client);
  ASSERT_TRUE(control.ok()) << control.status().ToString();
  control_ = std::move(control).value();
}

TestCluster::~TestCluster() {
  control_ = {};
  if (nats_) nats_->Stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void TestCluster::Register(const std::string& yaml) {
  auto spec = ModelSpec::Parse(yaml);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  // What registration records (catalog_admin.h) — its memory, measured by a
  // load — without the test request, since some test models sleep per batch.
  if (spec->memory_bytes == 0) {
    static ModelRuntimes runtimes;  // sidecars and pipelines too, as registration finds them
    Runtime* runtime = runtimes.For(*spec);
    ASSERT_TRUE(runtime) << "no runtime '" << spec->runtime << "'";
    auto model = runtime->Load(*ModelConfig::FromSpec(*spec), LoadContext{});
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    spec->memory_bytes = (*model)->memory_bytes();
  }
  ASSERT_TRUE(queue::EnsureWorkStreamExists(control_.js.get(), spec->pool, {}).ok());
  ASSERT_TRUE(queue::PutModel(control_.models.get(), *spec).ok());
}

std::unique_ptr<worker::Worker> TestCluster::StartWorker(std::vector<std::string> models, int executors) {
  worker::WorkerOptions o;
  o.models = std::move(models);
  o.executors = executors;
  return StartWorkerWith(std::move(o));
}

std::unique_ptr<worker::Worker> TestCluster::StartWorkerWith(worker::WorkerOptions o) {
  o.nats_url = url_;
  if (o.nats_security.ca_file.empty() && o.nats_security.user.empty()) o.nats_security = secure_.client;
  if (o.payload_store.empty()) o.payload_store = payload_dir();
  if (o.cache_dir.empty()) o.cache_dir = dir_ + "/model-cache";
  auto w = worker::Worker::Start(o);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? std::move(w).value() : nullptr;
}

std::unique_ptr<gateway::Gateway> TestCluster::StartGateway(gateway::GatewayOptions options) {
  options.nats_url = url_;
  if (options.nats_security.ca_file.empty() && options.nats_security.user.empty()) {
    options.nats_security = secure_.client;
  }
  options.http.port = 0;
  if (options.payload_store.empty()) options.payload_store = payload_dir();
  if (options.cache_dir.empty()) options.cache_dir = dir_ + "/gateway-cache";
  auto g = gateway::Gateway::Start(options);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? std::move(g).value() : nullptr;
}

Subprocess TestCluster::SpawnWorker(const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {SHOAL_BINARY, "worker", "--nats", url_, "--payload-store", payload_dir()};
  if (std::find(extra_args.begin(), extra_args.end(), "--cache-dir") == extra_args.end()) {
    argv.insert(argv.end(), {"--cache-dir", dir_ + "/model-cache"});
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  auto p = Subprocess::Spawn(argv, dir_ + "/worker.log");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

void TestCluster::WaitForWorkers(const std::string& model, size_t n) {
  auto registry = queue::WorkerRegistry::Open(control_.workers.get());
  ASSERT_TRUE(registry.ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    size_t serving = 0;
    for (const auto& w : (*registry)->Live()) {
      for (const auto& m : w.resident) serving += m == model;
    }
    if (serving >= n) return;
    ASSERT_LT(std::chrono::steady_clock::now(), until)
        << "only " << serving << " of " << n << " workers have " << model << " loaded";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

uint64_t TestCluster::WaitForEmptyStream(const std::string& pool, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  uint64_t left = StreamMessages(pool);
  while (left > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = StreamMessages(pool);
  }
  return left;
}

uint64_t TestCluster::StreamMessages(const std::string& pool) {
  return StreamMessagesNamed(queue::WorkStreamName(pool));
}

uint64_t TestCluster::StreamMessagesNamed(const std::string& name) {
  jsStreamInfo* si = nullptr;
  if (js_GetStreamInfo(&si, control_.js.get(), name.c_str(), nullptr, nullptr) != NATS_OK) return 0;
  const uint64_t n = si->State.Msgs;
  jsStreamInfo_Destroy(si);
  return n;
}

uint64_t TestCluster::ConsumerDeliveries(const std::string& model, const std::string& pool,
                                         queue::Priority priority) {
  jsConsumerInfo* ci = nullptr;
  if (js_GetConsumerInfo(&ci, control_.js.get(), queue::WorkStreamName(pool).c_str(),
                         queue::ConsumerName(model, priority).c_str(), nullptr, nullptr) != NATS_OK) {
    return 0;
  }
  const uint64_t n = ci->Delivered.Consumer;
  jsConsumerInfo_Destroy(ci);
  return n;
}

}  // namespace shoal::testing
