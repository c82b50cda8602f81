#include "queue/nats_server.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

namespace shoal::queue {
namespace {

// A quoted string of nats-server's configuration language.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// TLS and users go in a configuration file: nats-server has no flags for
// several users, and a file keeps passwords out of the process list.
Result<std::string> WriteConfig(const NatsServerOptions& o) {
  const std::string path = o.data_dir + "/nats-server.conf";
  std::ofstream f(path, std::ios::trunc);
  if (!o.tls_cert_file.empty()) {
    f << "tls {\n  cert_file: " << Quoted(o.tls_cert_file) << "\n  key_file: " << Quoted(o.tls_key_file)
      << "\n}\n";
  }
  if (!o.users.empty()) {
    f << "authorization {\n  users: [\n";
    for (const auto& [user, password] : o.users) {
      f << "    {user: " << Quoted(user) << ", password: " << Quoted(password) << "}\n";
    }
    f << "  ]\n}\n";
  }
  f.close();
  if (!f) return Internal("cannot write " + path);
  return path;
}

}  // namespace

Result<std::unique_ptr<NatsServer>> NatsServer::Start(const NatsServerOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Internal("cannot create " + options.data_dir + ": " + ec.message());
  int port = options.port;
  if (port == 0) {
    auto free = FreeLoopbackPort();
    if (!free.ok()) return free.status();
    port = *free;
  }
  // Go runtime settings for a nats-server that shares a small machine with
  // Shoal's own processes (measured with the serving-plane benchmark on 2
  // cores): a less eager garbage collector, and one scheduler thread so that
  // idle Go threads do not spin for work. The caller's environment wins.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return InvalidInput("nats-server TLS needs both a certificate and a key");
  }
  std::vector<std::string> argv = {"nats-server", "--jetstream", "--store_dir", options.data_dir,
                                   "--addr",      "127.0.0.1",   "--port",      std::to_string(port)};
  int monitoring_port = options.monitoring_port;
  if (monitoring_port == 0) {
    auto free = FreeLoopbackPort();
    if (!free.ok()) return free.status();
    monitoring_port = *free;
  }
  if (monitoring_port > 0) argv.insert(argv.end(), {"--http_port", std::to_string(monitoring_port)});
  if (!options.tls_cert_file.empty() || !options.users.empty()) {
    auto config = WriteConfig(options);
    if (!config.ok()) return config.status();
    argv.insert(argv.end(), {"--config", *config});
  }
  auto process = Subprocess::Spawn(
      argv,
      options.data_dir + "/nats-server.log",
      {"GOGC=400", "GOMAXPROCS=" + std::to_string(std::max(1u, cores / 2))});
  if (!process.ok()) return process.status();
  std::unique_ptr<NatsServer> server(new NatsServer(std::move(process).value(), port, !options.tls_cert_file.empty()));
  server->monitoring_port_ = monitoring_port;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (!PortAcceptsConnections(port)) {
    if (!server->process_.Running()) {
      return Internal("nats-server exited at start; see " + options.data_dir + "/nats-server.log");
    }
    if (std::chrono::steady_clock::now() > until) return Internal("nats-server did not start in 15 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return server;
}

NatsServer::~NatsServer() { Stop(); }

void NatsServer::Stop(std::chrono::milliseconds grace) { process_.Stop(SIGTERM, grace); }

}  // namespace shoal::queue
