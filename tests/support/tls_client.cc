#include "support/tls_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace shoal::testing {
namespace {

std::string SslError(const std::string& what) {
  char buf[256] = "";
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  return what + ": " + buf;
}

// "1a\r\n<26 bytes>\r\n...0\r\n\r\n" to the bytes it carries.
Result<std::string> Dechunk(const std::string& in) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t eol = in.find("\r\n", pos);
    if (eol == std::string::npos) return Internal("chunked body ends without its last chunk");
    const size_t size = std::strtoul(in.substr(pos, eol - pos).c_str(), nullptr, 16);
    if (size == 0) return out;
    if (eol + 2 + size > in.size()) return Internal("chunked body cut short");
    out.append(in, eol + 2, size);
    pos = eol + 2 + size + 2;
  }
}

}  // namespace

Result<std::unique_ptr<TlsConnection>> TlsConnection::Open(int port, const std::string& ca_file,
                                                           int timeout_ms) {
  std::unique_ptr<TlsConnection> c(new TlsConnection());
  c->fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd_ < 0) return Internal("socket");
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(c->fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(c->fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(c->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Internal("cannot connect to port " + std::to_string(port));
  }
  c->ctx_ = SSL_CTX_new(TLS_client_method());
  if (!c->ctx_) return Internal(SslError("SSL_CTX_new"));
  SSL_CTX_set_verify(c->ctx_, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(c->ctx_, ca_file.c_str(), nullptr) != 1) {
    return Internal(SslError("loading " + ca_file));
  }
  c->ssl_ = SSL_new(c->ctx_);
  SSL_set_fd(c->ssl_, c->fd_);
  SSL_set1_host(c->ssl_, "127.0.0.1");  // an IP literal: checked against the IP names
  if (SSL_connect(c->ssl_) != 1) return Internal(SslError("TLS handshake"));
  return c;
}

TlsConnection::~TlsConnection() {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
}

Status TlsConnection::Send(const std::string& method, const std::string& path, const std::string& body,
                           const std::map<std::string, std::string>& headers) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  if (SSL_write(ssl_, req.data(), static_cast<int>(req.size())) != static_cast<int>(req.size())) {
    return Internal(SslError("TLS write"));
  }
  return Status::Ok();
}

Result<HttpResult> TlsConnection::ReadResponse() {
  std::string raw;
  char buf[16384];
  for (;;) {
    const int n = SSL_read(ssl_, buf, sizeof buf);
    if (n > 0) {
      raw.append(buf, static_cast<size_t>(n));
      continue;
    }
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) break;
    return Internal(SslError("TLS read"));
  }
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return Internal("no response head in " + std::to_string(raw.size()) + " bytes");
  HttpResult res;
  const std::string head = raw.substr(0, end);
  res.status = std::atoi(head.substr(head.find(' ') + 1).c_str());
  for (size_t pos = head.find("\r\n"); pos != std::string::npos;) {
    const size_t next = head.find("\r\n", pos + 2);
    const std::string line = head.substr(pos + 2, next == std::string::npos ? next : next - pos - 2);
    if (const size_t colon = line.find(':'); colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      res.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    pos = next;
  }
  res.body = raw.substr(end + 4);
  if (res.Header("transfer-encoding") == "chunked") {
    auto body = Dechunk(res.body);
    if (!body.ok()) return body.status();
    res.body = std::move(body).value();
  }
  return res;
}

Result<std::string> TlsConnection::ReadSome() {
  char buf[16384];
  const int n = SSL_read(ssl_, buf, sizeof buf);
  if (n <= 0) return Internal(SslError("TLS read"));
  return std::string(buf, static_cast<size_t>(n));
}

void TlsConnection::CloseGracefully() {
  SSL_shutdown(ssl_);
  ::close(fd_);
  fd_ = -1;
}

Result<HttpResult> HttpsRequest(int port, const std::string& ca_file, const std::string& method,
                                const std::string& path, const std::string& body,
                                const std::map<std::string, std::string>& headers) {
  auto c = TlsConnection::Open(port, ca_file);
  if (!c.ok()) return c.status();
  SHOAL_RETURN_IF_ERROR((*c)->Send(method, path, body, headers));
  return (*c)->ReadResponse();
}

}  // namespace shoal::testing
