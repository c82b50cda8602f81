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

// Status line and headers (without the blank line) into `res`.
void ParseHead(const std::string& head, HttpResult* res) {
  size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  res->status = std::atoi(status_line.substr(status_line.find(' ') + 1).c_str());
  while (line_end != std::string::npos && line_end < head.size()) {
    const size_t next = head.find("\r\n", line_end + 2);
    const std::string line = head.substr(line_end + 2, next == std::string::npos ? std::string::npos : next - line_end - 2);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      res->headers[name] = value;
    }
    line_end = next;
  }
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
    ParseHead(buf.substr(0, header_end), &res);
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

StreamConnection::StreamConnection(int port, int timeout_ms) : fd_(Dial(port, timeout_ms)) {}

StreamConnection::~StreamConnection() { Close(); }

void StreamConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status StreamConnection::Send(const std::string& method, const std::string& path, const std::string& body,
                              const std::map<std::string, std::string>& headers, bool http10) {
  if (fd_ < 0) return Internal("not connected");
  std::string req = method + " " + path + (http10 ? " HTTP/1.0" : " HTTP/1.1") + "\r\nHost: localhost\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (!SendAll(fd_, req)) return Internal("send failed");
  return Status::Ok();
}

Status StreamConnection::Fill() {
  if (eof_) return Internal("connection closed");
  char buf[16384];
  const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
  if (n < 0) return Status(Code::kDeadlineExceeded, "nothing received within the timeout");
  if (n == 0) {
    eof_ = true;
    return Status::Ok();
  }
  raw_.append(buf, static_cast<size_t>(n));
  return Status::Ok();
}

Result<HttpResult> StreamConnection::ReadHead() {
  size_t end;
  while ((end = raw_.find("\r\n\r\n")) == std::string::npos) {
    if (eof_) return Internal("connection closed before a response");
    SHOAL_RETURN_IF_ERROR(Fill());
  }
  HttpResult res;
  ParseHead(raw_.substr(0, end), &res);
  raw_.erase(0, end + 4);
  body_.clear();
  body_ended_ = false;
  chunked_ = res.Header("transfer-encoding") == "chunked";
  chunk_left_ = 0;
  if (const std::string length = res.Header("content-length"); !length.empty()) {
    const size_t n = std::stoul(length);
    while (raw_.size() < n) {
      if (eof_) return Internal("connection closed mid-body");
      SHOAL_RETURN_IF_ERROR(Fill());
    }
    res.body = raw_.substr(0, n);
    body_ = res.body;  // a whole event stream can come as one plain response
    raw_.erase(0, n);
    body_ended_ = true;
  }
  return res;
}

Status StreamConnection::DecodeSome() {
  if (!chunked_) {  // HTTP/1.0: the body runs to the close
    if (!raw_.empty()) {
      body_ += raw_;
      raw_.clear();
      return Status::Ok();
    }
    if (eof_) {
      body_ended_ = true;
      return Status::Ok();
    }
    return Fill();
  }
  if (chunk_left_ > 0) {
    const size_t n = std::min(chunk_left_, raw_.size());
    body_.append(raw_, 0, n);
    raw_.erase(0, n);
    chunk_left_ -= n;
    if (n > 0) return Status::Ok();
    return eof_ ? Internal("connection closed mid-chunk") : Fill();
  }
  // A chunk's size line, after the previous chunk's CRLF.
  if (raw_.starts_with("\r\n")) raw_.erase(0, 2);
  const size_t line_end = raw_.find("\r\n");
  if (line_end == std::string::npos) return eof_ ? Internal("connection closed between chunks") : Fill();
  const size_t size = std::stoul(raw_.substr(0, line_end), nullptr, 16);
  if (size == 0) {
    if (raw_.size() < line_end + 4) return eof_ ? Internal("connection closed in the last chunk") : Fill();
    raw_.erase(0, line_end + 4);  // "0\r\n\r\n"
    body_ended_ = true;
    return Status::Ok();
  }
  raw_.erase(0, line_end + 2);
  chunk_left_ = size;
  return Status::Ok();
}

Result<std::string> StreamConnection::NextEvent() {
  for (;;) {
    if (const size_t end = body_.find("\n\n"); end != std::string::npos) {
      std::string event = body_.substr(0, end);
      body_.erase(0, end + 2);
      if (!event.starts_with("data: ")) return Internal("not an SSE data event: " + event);
      return event.substr(6);
    }
    if (body_ended_) {
      if (!body_.empty()) return Internal("body ends mid-event: " + body_);
      return Status(Code::kNotFound, "end of the stream");
    }
    SHOAL_RETURN_IF_ERROR(DecodeSome());
  }
}

Result<std::vector<std::string>> StreamConnection::RemainingEvents() {
  std::vector<std::string> events;
  for (;;) {
    auto e = NextEvent();
    if (!e.ok()) {
      if (e.status().code() == Code::kNotFound) return events;
      return e.status();
    }
    events.push_back(std::move(e).value());
  }
}

}  // namespace shoal::testing
