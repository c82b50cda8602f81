// NetnsNatsCluster: a 3-node NATS JetStream cluster for chaos tests, each
// nats-server in a network namespace of its own, so that killing one is a
// machine going away as far as the others and the clients can tell.
//
// Network (all names prefixed shoal-chaos-, so nothing else is touched):
//   bridge  shoal-chaos-br   in the root namespace, 10.213.77.254/24
//   netns   shoal-chaos-n<i> with veth shoal-chaos-c<i> at 10.213.77.<i>,
//           its peer shoal-chaos-h<i> on the bridge
//   nats-server shoal-chaos-n<i>: clients on 10.213.77.<i>:4222, cluster
//           routes on :6222, JetStream data under <dir>/n<i>
// Shoal's processes stay in the root namespace and reach the servers over
// the bridge with the comma-separated list of the three client URLs.
//
// Start removes leftovers of an earlier run that died, and the destructor
// (or a failed Start) removes everything it made, servers first. Only one
// cluster exists at a time on a machine: Start takes an exclusive lock
// (/tmp/shoal-chaos-netns.lock) held until destruction.
//
// Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2: WhyUnavailable() says
// why not otherwise, and callers report the scenario as skipped.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/subprocess.h"

namespace shoal::chaos {

class NetnsNatsCluster {
 public:
  static constexpr int kNodes = 3;

  // Why network namespaces cannot be used here; empty when they can.
  static std::string WhyUnavailable();
  // Starts the network and the servers and waits until JetStream has a
  // meta leader. `dir`: configuration, data and logs.
  static Result<std::unique_ptr<NetnsNatsCluster>> Start(const std::string& dir);
  ~NetnsNatsCluster();

  std::string urls() const;                   // nats://10.213.77.1:4222,...
  std::string url(int node) const;            // that node's alone
  // `argv` run inside node `node`'s namespace: a process of that host.
  static std::vector<std::string> OnHost(int node, std::vector<std::string> argv);
  static std::string ServerName(int node);    // shoal-chaos-n<node+1>
  int NodeNamed(const std::string& server_name) const;  // -1 if none

  void Kill(int node);       // SIGKILL
  // Takes node `node`'s link to the bridge down (its host leaves the
  // network: the server and every process in its namespace), and up again.
  Status Partition(int node);
  Status Heal(int node);
  Status Restart(int node);  // same configuration and data; waits until it listens
  bool Running(int node);

 private:
  explicit NetnsNatsCluster(std::string dir) : dir_(std::move(dir)) {}
  Status SetUpNetwork();
  void TearDown();
  Status StartNode(int node);

  std::string dir_;
  int lock_fd_ = -1;
  std::vector<std::optional<Subprocess>> servers_;  // by node
};

// Whether something accepts TCP connections on ip:port (IPv4).
bool TcpAccepts(const std::string& ip, int port);

}  // namespace shoal::chaos
