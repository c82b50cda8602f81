// shoal up: the all-in-one cluster for one machine — nats-server (unless
// --nats is given), the bundled models registered, one worker, one gateway.
// Ctrl-C drains the gateway, then the worker, then stops nats-server.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "admin/catalog_admin.h"
#include "admin/model_directory.h"
#include "admin/provenance.h"
#include "cli/commands.h"
#include "common/log.h"
#include "gateway/gateway.h"
#include "queue/nats_server.h"
#include "worker/worker.h"

namespace shoal::cli {
namespace {

struct UpOptions {
  std::string nats_url;  // empty: start our own nats-server
  queue::NatsSecurity nats_security;  // for --nats
  std::string data_dir = "var";
  std::string payload_store;  // default: <data_dir>/payloads
  std::string models_dir;
  int nats_port = 0;
  gateway::GatewayOptions gateway;
  worker::WorkerOptions worker;
};

int Up(UpOptions& o) {
  BlockStopSignals();
  std::unique_ptr<queue::NatsServer> nats;
  std::string url = o.nats_url;
  if (url.empty()) {
    const std::string dir = std::filesystem::absolute(o.data_dir + "/nats").string();
    auto server = queue::NatsServer::Start({.data_dir = dir, .port = o.nats_port});
    if (!server.ok()) {
      spdlog::error("up: {}", server.status().ToString());
      return 1;
    }
    nats = std::move(server).value();
    url = nats->url();
    spdlog::info("up: nats-server with JetStream at {} (data in {})", url, dir);
  }

  const std::string models_dir = o.models_dir.empty() ? DefaultModelsDir() : o.models_dir;
  auto specs = LoadModelProfiles(models_dir);
  if (!specs.ok()) {
    spdlog::error("up: {}", specs.status().ToString());
    return 1;
  }
  {
    auto admin = admin::CatalogAdmin::Connect(url, o.nats_security);
    if (!admin.ok()) {
      spdlog::error("up: {}", admin.status().ToString());
      return 1;
    }
    for (auto& spec : *specs) {
      if (Status s = admin::CompleteFromFiles(&spec); !s.ok()) {
        spdlog::error("up: {}: {}", spec.id, s.ToString());
        return 1;
      }
      admin::RegisterOptions options{.limits = {},
                                     .owner = admin::CommandLineOwner(),
                                     .license = {},
                                     .require_license = o.gateway.require_license,
                                     .candidate = false};
      if (auto stored = admin->Register(spec, options); !stored.ok()) {
        spdlog::error("up: registering {}: {}", spec.id, stored.status().ToString());
        return 1;
      }
    }
    spdlog::info("up: {} model(s) registered from {}", specs->size(), models_dir);
  }

  // One machine: a directory beside the nats-server's data, unless told.
  if (o.payload_store.empty()) o.payload_store = std::filesystem::absolute(o.data_dir + "/payloads").string();
  o.worker.payload_store = o.gateway.payload_store = o.payload_store;
  o.worker.nats_url = url;
  o.worker.otlp_endpoint = o.gateway.otlp_endpoint;
  o.worker.nats_security = o.nats_security;
  auto w = worker::Worker::Start(o.worker);
  if (!w.ok()) {
    spdlog::error("up: worker: {}", w.status().ToString());
    return 1;
  }
  o.gateway.nats_url = url;
  o.gateway.nats_security = o.nats_security;
  auto gw = gateway::Gateway::Start(o.gateway);
  if (!gw.ok()) {
    spdlog::error("up: gateway: {}", gw.status().ToString());
    (*w)->Drain(std::chrono::seconds(5));
    return 1;
  }
  const std::string http = (o.gateway.http.tls_cert_file.empty() ? "http://" : "https://") + o.gateway.http.host + ":" + std::to_string((*gw)->port());
  std::printf("\nShoal is up at %s   (NATS %s)\n", http.c_str(), url.c_str());
  std::printf("Dashboard: %s/   Metrics: %s/metrics (gateway)", http.c_str(), http.c_str());
  if ((*w)->metrics_port() > 0) {
    std::printf(", http://%s:%d/metrics (worker)", o.worker.metrics_host.c_str(), (*w)->metrics_port());
  }
  std::printf("\n");
  // The example uses a real embedder when there is one (not the identity runtime).
  auto example = std::find_if(specs->begin(), specs->end(),
                              [](const ModelSpec& s) { return s.runtime != "identity" && s.task == Task::kEncode; });
  if (example == specs->end()) example = specs->begin();
  if (example != specs->end()) {
    std::printf("Try:\n  curl -s %s/v1/embeddings -H 'Content-Type: application/json' \\\n"
                "    -d '{\"model\": \"%s\", \"input\": [\"a cat\", \"a kitten\"]}'\n",
                http.c_str(), example->id.c_str());
  }
  if (o.gateway.auth == gateway::AuthMode::kKeys) {
    std::printf("API keys are on: make one with\n  shoal keys --nats %s create --name me\n"
                "and send it as -H 'Authorization: Bearer <key>'.\n",
                url.c_str());
  }
  std::printf("Ctrl-C drains and stops everything.\n\n");
  std::fflush(stdout);

  WaitForStopSignal();
  spdlog::info("up: stopping — draining the gateway, then the worker");
  (*gw)->Drain(std::chrono::seconds(10));
  (*w)->Drain(std::chrono::seconds(10));
  gw->reset();
  w->reset();
  if (nats) nats->Stop();
  spdlog::info("up: stopped");
  return 0;
}

}  // namespace

Subcommand AddUp(CLI::App& app) {
  auto* sub = app.add_subcommand("up", "All-in-one: nats-server, the bundled models, a worker, a gateway");
  auto o = std::make_shared<UpOptions>();
  sub->add_option("--nats", o->nats_url, "use this NATS server instead of starting one");
  // Security for --nats (a server `up` starts is loopback only, without TLS).
  AddNatsSecurityOptions(sub, &o->nats_security);
  AddHttpsOptions(sub, &o->gateway.http);
  sub->add_option("--nats-port", o->nats_port, "port for the nats-server it starts (0: free port)");
  sub->add_option("--data-dir", o->data_dir, "where the started nats-server keeps its data")->capture_default_str();
  sub->add_option("--models-dir", o->models_dir, "profiles to register (default: ./models)");
  sub->add_option("--host", o->gateway.http.host, "gateway listen address")->capture_default_str();
  sub->add_option("--port", o->gateway.http.port, "gateway port")->capture_default_str();
  sub->add_option("--io-threads", o->gateway.http.io_threads, "gateway I/O threads")->capture_default_str();
  AddConnectionOptions(sub, &o->gateway.http);
  sub->add_option("--executors", o->worker.executors, "worker executors")->capture_default_str();
  o->worker.metrics_port = 0;  // any free port; the banner says which
  sub->add_option("--worker-metrics-port", o->worker.metrics_port,
                  "the worker's GET /metrics port (0: any free port; -1: off)")
      ->capture_default_str();
  AddResidencyOptions(sub, &o->worker);
  sub->add_option("--admin-token", o->gateway.admin_token,
                  "bearer token for /v1/admin (default: $SHOAL_ADMIN_TOKEN; none: local clients only)")
      ->envname("SHOAL_ADMIN_TOKEN");
  AddAdmissionOptions(sub, &o->gateway);
  AddPayloadStoreOption(sub, &o->payload_store);
  AddTraceOptions(sub, &o->gateway.otlp_endpoint, &o->gateway.trace_sample);
  AddRequireLicenseOption(sub, &o->gateway.require_license);
  return {sub, [o] { return Up(*o); }};
}

}  // namespace shoal::cli
