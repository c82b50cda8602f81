#include "bench_cluster.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "admin/catalog_admin.h"

namespace shoal::bench {

std::unique_ptr<BenchCluster> BenchCluster::Start(const char* who, const std::string& dir,
                                                  const std::vector<ModelSpec>& specs, worker::WorkerOptions wo,
                                                  gateway::GatewayOptions gateway_options) {
  auto fail = [&](const std::string& what, const Status& st) {
    std::fprintf(stderr, "%s: %s: %s\n", who, what.c_str(), st.ToString().c_str());
    return nullptr;
  };
  std::unique_ptr<BenchCluster> c(new BenchCluster());
  c->dir_ = dir;
  auto nats = queue::NatsServer::Start({.data_dir = dir});
  if (!nats.ok()) return fail("nats-server", nats.status());
  c->nats_ = std::move(nats).value();
  auto admin = admin::CatalogAdmin::Connect(c->nats_->url());
  if (!admin.ok()) return fail("catalog", admin.status());
  for (const ModelSpec& spec : specs) {
    std::fprintf(stderr, "%s: registering %s (loads and checks it)\n", who, spec.id.c_str());
    if (auto r = admin->Register(spec); !r.ok()) return fail("register " + spec.id, r.status());
  }
  wo.nats_url = c->nats_->url();
  auto worker = worker::Worker::Start(wo);
  if (!worker.ok()) return fail("worker", worker.status());
  c->worker_ = std::move(worker).value();
  gateway::GatewayOptions go = std::move(gateway_options);
  go.nats_url = c->nats_->url();
  go.http.port = 0;
  auto gateway = gateway::Gateway::Start(go);
  if (!gateway.ok()) return fail("gateway", gateway.status());
  c->gateway_ = std::move(gateway).value();
  for (int i = 0; i < 300 && c->worker_->residency().resident.size() < specs.size(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return c;
}

BenchCluster::~BenchCluster() {
  if (gateway_) gateway_->Drain(std::chrono::seconds(2));
  if (worker_) worker_->Drain(std::chrono::seconds(2));
  gateway_.reset();
  worker_.reset();
  nats_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace shoal::bench
