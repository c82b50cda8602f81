// A small blocking HTTPS client for tests, on OpenSSL directly: one request
// per connection (Connection: close), the response read until the server
// closes, a chunked (streamed) body de-chunked. The server's certificate is
// verified against `ca_file` and must name 127.0.0.1.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "support/http_client.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace shoal::testing {

class TlsConnection {
 public:
  // Connects to 127.0.0.1:`port` and completes the TLS handshake.
  static Result<std::unique_ptr<TlsConnection>> Open(int port, const std::string& ca_file,
                                                     int timeout_ms = 10000);
  ~TlsConnection();

  Status Send(const std::string& method, const std::string& path, const std::string& body = "",
              const std::map<std::string, std::string>& headers = {});
  // Reads until the server closes: the status, headers and (de-chunked) body.
  Result<HttpResult> ReadResponse();
  // What one TLS read returns (raw: head and chunk framing included).
  Result<std::string> ReadSome();
  // Hangs up as a polite client does: close_notify, then the TCP close.
  void CloseGracefully();

 private:
  TlsConnection() = default;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
};

// Open, Send, ReadResponse.
Result<HttpResult> HttpsRequest(int port, const std::string& ca_file, const std::string& method,
                                const std::string& path, const std::string& body = "",
                                const std::map<std::string, std::string>& headers = {});

}  // namespace shoal::testing
