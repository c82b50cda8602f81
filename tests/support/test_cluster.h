// TestCluster: a real nats-server on a free loopback port in a temporary
// directory, plus helpers to register models and to start gateways and
// workers — in this process, or as `shoal` processes when a test needs to
// kill one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "gateway/gateway.h"
#include "queue/control_plane.h"
#include "queue/nats_server.h"
#include "queue/priority.h"
#include "worker/worker.h"

namespace shoal::testing {

// A secured nats-server (TLS, users) and how this cluster's own
// connections, workers and gateways reach it.
struct SecureNats {
  std::string tls_cert_file, tls_key_file;                  // the server's
  std::vector<std::pair<std::string, std::string>> users;   // the server's
  queue::NatsSecurity client;                               // ours
};

class TestCluster {
 public:
  TestCluster() : TestCluster(SecureNats{}) {}  // starts nats-server; fails the test on error
  explicit TestCluster(SecureNats secure);
  ~TestCluster();

  const std::string& nats_url() const { return url_; }
  // nats-server's HTTP monitoring endpoint (/jsz, /varz) on 127.0.0.1.
  int nats_monitoring_port() const { return nats_->monitoring_port(); }
  queue::ControlPlane& control_plane() { return control_; }

  // Stops nats-server (SIGTERM) and, with Start, brings it back on the same
  // port with the same data.
  void StopNats();
  void StartNats();
  const std::string& dir() const { return dir_; }
  // The payload store its gateways and workers share (a directory).
  std::string payload_dir() const { return dir_ + "/payloads"; }

  // Registers a model profile (YAML) in the catalog.
  void Register(const std::string& yaml);

  std::unique_ptr<worker::Worker> StartWorker(std::vector<std::string> models = {},
                                              int executors = 1);
  // nats_url (and nats_security, unless the options have their own) set here.
  std::unique_ptr<worker::Worker> StartWorkerWith(worker::WorkerOptions options);
  std::unique_ptr<gateway::Gateway> StartGateway(gateway::GatewayOptions options = {});

  // `shoal worker` as a process (a test may SIGKILL it).
  Subprocess SpawnWorker(const std::vector<std::string>& extra_args = {});

  // Waits until `n` live workers have `model` loaded (per the registry).
  void WaitForWorkers(const std::string& model, size_t n);

  // Messages waiting in a pool's work stream, or in any stream by name.
  uint64_t StreamMessages(const std::string& pool = "default");
  uint64_t StreamMessagesNamed(const std::string& stream);
  // Messages a model's consumer (of a priority class) has delivered so far,
  // redeliveries included.
  uint64_t ConsumerDeliveries(const std::string& model, const std::string& pool = "default",
                              queue::Priority priority = queue::Priority::kInteractive);
  // Waits (up to `timeout`) until the pool's work stream is empty; returns
  // what is left. Acks travel on a buffered connection and a killed worker's
  // unacked items come back after AckWait, so "empty" takes a moment.
  uint64_t WaitForEmptyStream(const std::string& pool = "default",
                              std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  queue::NatsServerOptions ServerOptions(int port, int monitoring_port) const;

  SecureNats secure_;
  std::string dir_;
  std::unique_ptr<queue::NatsServer> nats_;
  std::string url_;
  queue::ControlPlane control_;
};

// A profile for the identity model with test-friendly queue settings,
// pinned (loaded when a worker starts), unless `extra` has its own `queue:`
// or `pinned:`.
std::string IdentityProfile(const std::string& id, const std::string& extra = "");

}  // namespace shoal::testing
