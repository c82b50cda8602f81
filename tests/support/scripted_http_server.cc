#include "support/scripted_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace shoal::testing {
namespace {

// Reads one request (headers, then Content-Length bytes of body) into its
// path, head and body; the path is "" when the connection closed first.
void ReadRequest(int fd, std::string* path, std::string* head, std::string* body) {
  std::string in;
  char buf[4096];
  size_t header_end = std::string::npos;
  while ((header_end = in.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return;
    in.append(buf, static_cast<size_t>(n));
  }
  size_t length = 0;
  if (size_t cl = in.find("Content-Length: "); cl != std::string::npos && cl < header_end) {
    length = std::strtoul(in.c_str() + cl + 16, nullptr, 10);
  }
  while (in.size() < header_end + 4 + length) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  const size_t sp1 = in.find(' ');
  const size_t sp2 = in.find(' ', sp1 + 1);
  *path = in.substr(sp1 + 1, sp2 - sp1 - 1);
  *head = in.substr(0, header_end);
  *body = in.substr(header_end + 4);
}

}  // namespace

ScriptedHttpServer::ScriptedHttpServer(std::map<std::string, std::string> replies) : replies_(std::move(replies)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::listen(listen_fd_, 128);  // tests start many requests at once
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

ScriptedHttpServer::~ScriptedHttpServer() {
  stop_ = true;
  thread_.join();
  for (int fd : held_) ::close(fd);
  ::close(listen_fd_);
}

std::string ScriptedHttpServer::Reply(int status, const std::string& content_type, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + content_type +
         "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void ScriptedHttpServer::Serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;  // wakes to see stop_
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    std::string path, head, body;
    ReadRequest(fd, &path, &head, &body);
    {
      std::lock_guard lock(mu_);
      received_.push_back({path, head, body});
    }
    ++requests_;
    auto it = replies_.end();
    for (auto r = replies_.lower_bound(path + "|"); r != replies_.end() && r->first.rfind(path + "|", 0) == 0; ++r) {
      if (body.find(r->first.substr(path.size() + 1)) != std::string::npos) it = r;
    }
    if (it == replies_.end()) it = replies_.find(path);
    if (it != replies_.end() && it->second == kHang) {
      held_.push_back(fd);
      continue;
    }
    const std::string reply = it != replies_.end() ? it->second : Reply(404, "text/plain", "not found");
    for (size_t sent = 0; sent < reply.size();) {
      const ssize_t n = ::write(fd, reply.data() + sent, reply.size() - sent);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    ::close(fd);
  }
}

}  // namespace shoal::testing
