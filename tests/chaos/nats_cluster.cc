#include "chaos/nats_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "queue/nats.h"
#include "queue/topology.h"

namespace shoal::chaos {
namespace {

constexpr char kSubnet[] = "10.213.77.";
constexpr char kBridge[] = "shoal-chaos-br";
constexpr char kLockFile[] = "/tmp/shoal-chaos-netns.lock";

std::string Ip(int node) { return kSubnet + std::to_string(node + 1); }
std::string Netns(int node) { return "shoal-chaos-n" + std::to_string(node + 1); }
std::string HostVeth(int node) { return "shoal-chaos-h" + std::to_string(node + 1); }
std::string NsVeth(int node) { return "shoal-chaos-c" + std::to_string(node + 1); }

// Runs a fixed command line (no outside input in it), output to `log`.
Status Sh(const std::string& cmd, const std::string& log) {
  const int rc = std::system((cmd + " >>'" + log + "' 2>&1").c_str());
  if (rc != 0) return Internal("`" + cmd + "` failed (exit " + std::to_string(rc) + "); see " + log);
  return Status::Ok();
}

}  // namespace

bool TcpAccepts(const std::string& ip, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

std::string NetnsNatsCluster::WhyUnavailable() {
  if (::geteuid() != 0) return "needs root (network namespaces)";
  if (std::system("ip -V >/dev/null 2>&1") != 0) return "iproute2 (`ip`) is not installed";
  if (std::system("nats-server --version >/dev/null 2>&1") != 0) return "nats-server is not installed";
  // A throwaway namespace proves the kernel and the container allow it.
  const std::string probe = "shoal-chaos-probe" + std::to_string(::getpid());
  if (std::system(("ip netns add " + probe + " >/dev/null 2>&1").c_str()) != 0) {
    return "cannot create network namespaces here (`ip netns add` failed)";
  }
  std::system(("ip netns del " + probe + " >/dev/null 2>&1").c_str());
  return "";
}

Result<std::unique_ptr<NetnsNatsCluster>> NetnsNatsCluster::Start(const std::string& dir) {
  if (std::string why = WhyUnavailable(); !why.empty()) return Status(Code::kNoCapacity, why);
  std::unique_ptr<NetnsNatsCluster> c(new NetnsNatsCluster(dir));
  std::filesystem::create_directories(dir);
  c->lock_fd_ = ::open(kLockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (c->lock_fd_ < 0 || ::flock(c->lock_fd_, LOCK_EX) != 0) return Internal(std::string("cannot lock ") + kLockFile);
  c->TearDown();  // leftovers of a run that died
  if (Status s = c->SetUpNetwork(); !s.ok()) return s;  // the destructor removes what was made
  c->servers_.resize(kNodes);
  for (int i = 0; i < kNodes; ++i) SHOAL_RETURN_IF_ERROR(c->StartNode(i));
  for (int i = 0; i < kNodes; ++i) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!TcpAccepts(Ip(i), 4222)) {
      if (!c->Running(i)) return Internal("nats-server " + ServerName(i) + " exited; see " + dir + "/n" + std::to_string(i + 1) + ".log");
      if (std::chrono::steady_clock::now() > until) return Internal(ServerName(i) + " did not listen in 15 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  // JetStream answers once the servers have elected a meta leader.
  auto nc = queue::Connect({.url = c->urls(), .name = "chaos-cluster-check"});
  if (!nc.ok()) return nc.status();
  auto js = queue::NewJetStream(nc->get());
  if (!js.ok()) return js.status();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    jsAccountInfo* ai = nullptr;
    if (js_GetAccountInfo(&ai, js->get(), nullptr, nullptr) == NATS_OK) {
      jsAccountInfo_Destroy(ai);
      break;
    }
    if (std::chrono::steady_clock::now() > until) return Internal("the JetStream cluster elected no leader in 30 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return c;
}

NetnsNatsCluster::~NetnsNatsCluster() {
  TearDown();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

std::string NetnsNatsCluster::urls() const {
  std::string out;
  for (int i = 0; i < kNodes; ++i) out += (i ? ",nats://" : "nats://") + Ip(i) + ":4222";
  return out;
}

std::string NetnsNatsCluster::url(int node) const { return "nats://" + Ip(node) + ":4222"; }

std::vector<std::string> NetnsNatsCluster::OnHost(int node, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"ip", "netns", "exec", Netns(node)});
  return argv;
}

std::string NetnsNatsCluster::ServerName(int node) { return Netns(node); }

int NetnsNatsCluster::NodeNamed(const std::string& name) const {
  for (int i = 0; i < kNodes; ++i) {
    if (ServerName(i) == name) return i;
  }
  return -1;
}

Status NetnsNatsCluster::SetUpNetwork() {
  const std::string log = dir_ + "/network.log";
  const std::string br = kBridge;
  SHOAL_RETURN_IF_ERROR(Sh("ip link add " + br + " type bridge", log));
  SHOAL_RETURN_IF_ERROR(Sh("ip addr add " + std::string(kSubnet) + "254/24 dev " + br, log));
  SHOAL_RETURN_IF_ERROR(Sh("ip link set " + br + " up", log));
  for (int i = 0; i < kNodes; ++i) {
    const std::string ns = Netns(i), h = HostVeth(i), c = NsVeth(i);
    SHOAL_RETURN_IF_ERROR(Sh("ip netns add " + ns, log));
    SHOAL_RETURN_IF_ERROR(Sh("ip link add " + h + " type veth peer name " + c, log));
    SHOAL_RETURN_IF_ERROR(Sh("ip link set " + c + " netns " + ns, log));
    SHOAL_RETURN_IF_ERROR(Sh("ip link set " + h + " master " + br + " up", log));
    SHOAL_RETURN_IF_ERROR(Sh("ip -n " + ns + " addr add " + Ip(i) + "/24 dev " + c, log));
    SHOAL_RETURN_IF_ERROR(Sh("ip -n " + ns + " link set " + c + " up", log));
    SHOAL_RETURN_IF_ERROR(Sh("ip -n " + ns + " link set lo up", log));
  }
  return Status::Ok();
}

Status NetnsNatsCluster::StartNode(int i) {
  const std::string name = ServerName(i);
  const std::string conf = dir_ + "/n" + std::to_string(i + 1) + ".conf";
  std::ofstream f(conf, std::ios::trunc);
  f << "server_name: " << name << "\n"
    << "listen: " << Ip(i) << ":4222\n"
    << "jetstream { store_dir: \"" << dir_ << "/n" << i + 1 << "\" }\n"
    << "cluster {\n  name: shoal-chaos\n  listen: " << Ip(i) << ":6222\n  routes: [";
  for (int j = 0, first = 1; j < kNodes; ++j) {
    if (j == i) continue;
    f << (first ? "" : ", ") << "nats-route://" << Ip(j) << ":6222";
    first = 0;
  }
  f << "]\n}\n";
  f.close();
  if (!f) return Internal("cannot write " + conf);
  // `ip netns exec` execs nats-server in place: the pid is the server's.
  auto p = Subprocess::Spawn({"ip", "netns", "exec", Netns(i), "nats-server", "--config", conf},
                             dir_ + "/n" + std::to_string(i + 1) + ".log", {"GOGC=400", "GOMAXPROCS=1"});
  if (!p.ok()) return p.status();
  servers_[static_cast<size_t>(i)].emplace(std::move(p).value());
  return Status::Ok();
}

Status NetnsNatsCluster::Partition(int node) {
  return Sh("ip link set " + HostVeth(node) + " down", dir_ + "/network.log");
}

Status NetnsNatsCluster::Heal(int node) { return Sh("ip link set " + HostVeth(node) + " up", dir_ + "/network.log"); }

void NetnsNatsCluster::Kill(int node) {
  auto& s = servers_[static_cast<size_t>(node)];
  if (s) s->Stop(SIGKILL, std::chrono::milliseconds(0));
}

bool NetnsNatsCluster::Running(int node) {
  auto& s = servers_[static_cast<size_t>(node)];
  return s && s->Running();
}

Status NetnsNatsCluster::Restart(int node) {
  Kill(node);
  SHOAL_RETURN_IF_ERROR(StartNode(node));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (!TcpAccepts(Ip(node), 4222)) {
    if (!Running(node)) return Internal(ServerName(node) + " exited at restart");
    if (std::chrono::steady_clock::now() > until) return Internal(ServerName(node) + " did not listen in 15 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Ok();
}

void NetnsNatsCluster::TearDown() {
  for (auto& s : servers_) {
    if (s) s->Stop(SIGTERM, std::chrono::milliseconds(3000));
  }
  servers_.clear();
  // Deleting a namespace deletes the veth end in it, and so the pair.
  std::string cmd;
  for (int i = 0; i < kNodes; ++i) {
    cmd += "ip netns del " + Netns(i) + " 2>/dev/null; ip link del " + HostVeth(i) + " 2>/dev/null; ";
  }
  cmd += std::string("ip link del ") + kBridge + " 2>/dev/null; true";
  std::system(cmd.c_str());
}

}  // namespace shoal::chaos
