// A loopback HTTP server that answers each path with a fixed reply, written
// as raw bytes: the faulty upstreams of the upstream runtime's tests (one
// that answers 500, one that streams garbage, one that never answers). The
// real upstream of those tests is llama-server (support/llama_server.h);
// this stands in only for servers misbehaving in ways no real one does on
// purpose.
//
// Threading: one thread accepts and answers, one connection at a time; a
// "hang" reply holds its connection open until the server is destroyed.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shoal::testing {

class ScriptedHttpServer {
 public:
  // `replies`: path → the whole HTTP response (status line, headers, body),
  // or kHang to accept the request and never answer; a key "path|text"
  // answers the requests to that path whose body contains `text`, before
  // the path's own reply. Other paths get 404.
  static constexpr char kHang[] = "<hang>";
  explicit ScriptedHttpServer(std::map<std::string, std::string> replies);
  ~ScriptedHttpServer();

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int requests() const { return requests_.load(); }

  // The requests read so far, in order: path, head (request line and
  // headers, as sent) and body.
  struct Received {
    std::string path, head, body;
  };
  std::vector<Received> received() const {
    std::lock_guard lock(mu_);
    return received_;
  }

  // A complete response with `status`, a content type and `body`.
  static std::string Reply(int status, const std::string& content_type, const std::string& body);

 private:
  void Serve();

  const std::map<std::string, std::string> replies_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::vector<int> held_;  // connections of hung requests
  mutable std::mutex mu_;
  std::vector<Received> received_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace shoal::testing
