#include "tune/private_cluster.h"

#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "common/log.h"

namespace shoal::tune {

Result<std::unique_ptr<PrivateCluster>> PrivateCluster::Start(
    const PrivateClusterOptions& options) {
  std::unique_ptr<PrivateCluster> c(new PrivateCluster());
  char tmpl[] = "/tmp/shoal-tune-XXXXXX";
  if (mkdtemp(tmpl) == nullptr)
    return Internal("cannot make a temporary directory for the tuning cluster");
  c->dir_ = tmpl;
  auto nats = queue::NatsServer::Start({.data_dir = c->dir_ + "/nats", .port = 0});
  if (!nats.ok()) return nats.status();
  c->nats_ = std::move(nats).value();
  const std::string url = c->nats_->url();

  auto admin = admin::CatalogAdmin::Connect(url);
  if (!admin.ok()) return admin.status();
  c->admin_ = std::make_unique<admin::CatalogAdmin>(std::move(admin).value());

  worker::WorkerOptions w;
  w.nats_url = url;
  w.executors = std::max(1, options.executors);
  w.payload_store = c->dir_ + "/payloads";
  auto worker = worker::Worker::Start(w);
  if (!worker.ok()) return worker.status();
  c->worker_ = std::move(worker).value();

  gateway::GatewayOptions g;
  g.nats_url = url;
  g.http.host = "127.0.0.1";
  g.http.port = 0;
  g.payload_store = w.payload_store;
  auto gw = gateway::Gateway::Start(g);
  if (!gw.ok()) return gw.status();
  c->gateway_ = std::move(gw).value();
  return c;
}

PrivateCluster::~PrivateCluster() {
  if (gateway_) gateway_->Drain(std::chrono::seconds(5));
  if (worker_) worker_->Drain(std::chrono::seconds(5));
  gateway_.reset();
  worker_.reset();
  admin_.reset();
  if (nats_) nats_->Stop();
  nats_.reset();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

Status PrivateCluster::Install(ModelSpec spec, const loadtest::MixEntry& probe,
                               std::chrono::seconds timeout) {
  if (!installed_.empty() && installed_ != spec.id) {
    // Gone before the next one loads: one model's memory at a time.
    if (Status s = admin_->Remove(installed_); !s.ok()) return s;
  }
  spec.pinned = true;
  auto stored = admin_->Register(spec);
  if (!stored.ok()) return stored.status();
  installed_ = spec.id;

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last = "no answer";
  while (std::chrono::steady_clock::now() < deadline) {
    auto answer =
        loadtest::SendOnce("127.0.0.1", gateway_->port(), probe, {}, std::chrono::seconds(60));
    if (answer.ok() && answer->status == 200) return Status::Ok();
    if (answer.ok()) {
      last = std::to_string(answer->status) + " " + answer->body.substr(0, 200);
      // A model that cannot load will not load on the next try either.
      if (answer->status == 502 || answer->status == 400) {
        return InvalidInput(spec.id + " does not serve: " + last);
      }
    } else {
      last = answer.status().ToString();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status(Code::kDeadlineExceeded, spec.id + " was not serving within " +
                                             std::to_string(timeout.count()) +
                                             " s (last answer: " + last + ")");
}

}  // namespace shoal::tune
