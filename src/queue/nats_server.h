// A local nats-server with JetStream, as `shoal up` and the integration tests
// run it: loopback only, data under a directory of the caller's.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/subprocess.h"

namespace shoal::queue {

struct NatsServerOptions {
  std::string data_dir{};  // JetStream store (and the log file, nats-server.log)
  int port = 0;            // 0: a free one
  // Both set: clients must use TLS with this certificate and key (PEM).
  std::string tls_cert_file{};
  std::string tls_key_file{};
  // Non-empty: clients must log in as one of these (user, password).
  std::vector<std::pair<std::string, std::string>> users{};
  // The HTTP monitoring endpoint (/varz, /jsz: what KEDA's nats-jetstream
  // scaler reads), on 127.0.0.1: -1 none, 0 a free port.
  int monitoring_port = -1;
};

class NatsServer {
 public:
  // Starts nats-server and waits until it accepts connections.
  static Result<std::unique_ptr<NatsServer>> Start(const NatsServerOptions& options);
  ~NatsServer();

  std::string url() const { return (tls_ ? "tls://127.0.0.1:" : "nats://127.0.0.1:") + std::to_string(port_); }
  int port() const { return port_; }
  int monitoring_port() const { return monitoring_port_; }  // -1: none
  pid_t pid() const { return process_.pid(); }

  // SIGTERM, then SIGKILL after `grace`.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  NatsServer(Subprocess process, int port, bool tls) : process_(std::move(process)), port_(port), tls_(tls) {}
  Subprocess process_;
  int monitoring_port_ = -1;
  int port_;
  bool tls_;
};

}  // namespace shoal::queue
