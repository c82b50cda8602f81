#include "support/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace shoal::testing {
namespace {

int Dial(int port, int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

HttpClient::~HttpClient() { Close(); }

void HttpClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status HttpClient::Connect() {
  if (fd_ >= 0) return Status::Ok();
  fd_ = Dial(port_, timeout_ms_);
  if (fd_ < 0) return Internal("cannot connect to port " + std::to_string(port_));
  return Status::Ok();
}

void HttpClient::SendAndHangUp(int port, const std::string& raw) {
  const int fd = Dial(port, 5000);
  if (fd < 0) return;
  SendAll(fd, raw);
  ::close(fd);
}

Result<HttpResult> HttpClient::Request(const std::string& method, const std::string& path,
                                       const std::string& body,
                                       const std::map<std::string, std::string>& headers) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  req += body;
  for (int attempt = 0; attempt < 2; ++attempt) {  // a kept-alive connection may have closed
    SHOAL_RETURN_IF_ERROR(Connect());
    if (!SendAll(fd_, req)) {
      Close();
      continue;
    }
    std::string buf;
    char chunk[65536];
    size_t header_end = std::string::npos;
    while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
    }
    if (header_end == std::string::npos) {
      Close();
      if (buf.empty() && attempt == 0) continue;
      return Internal("no HTTP response");
    }
    HttpResult res;
    const std::string head = buf.substr(0, header_end);
    size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    res.status = std::atoi(status_line.substr(status_line.find(' ') + 1).c_str());
    while (line_end != std::string::npos && line_end < head.size()) {
      const size_t next = head.find("\r\n", line_end + 2);
      const std::string line = head.substr(line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), ::tolower);
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        res.headers[name] = value;
      }
      line_end = next;
    }
    const size_t length = std::stoul(res.Header("content-length").empty() ? "0" : res.Header("content-length"));
    res.body = buf.substr(header_end + 4);
    while (res.body.size() < length) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) return Internal("connection closed mid-body");
      res.body.append(chunk, static_cast<size_t>(n));
    }
    if (res.Header("connection") == "close") Close();
    return res;
  }
  return Internal("request failed");
}

}  // namespace shoal::testing
