// HttpServer: HTTP/1.1 with keep-alive on Boost.Beast, several I/O threads.
//
// Each I/O thread runs its own io_context with its own acceptor on the same
// port (SO_REUSEPORT: the kernel spreads connections), so a connection lives
// on one thread and needs no strand. A connection is a coroutine: read a
// request, hand it to the handler, wait for the Responder (called from any
// thread; it posts back to the connection's thread), write, repeat.
//
// A body over `max_body_bytes` is answered 413 PAYLOAD_TOO_LARGE without
// reading it; a malformed request 400 INVALID_INPUT; both close the
// connection.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "gateway/http.h"

namespace shoal::gateway {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  int io_threads = 2;
  size_t max_body_bytes = 16 * 1024 * 1024;
};

class HttpServer {
 public:
  using Handler = std::function<void(HttpRequest&&, Responder)>;

  static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, Handler handler);
  virtual ~HttpServer() = default;

  virtual int port() const = 0;
  // Closes the listening sockets; open connections carry on.
  virtual void StopAccepting() = 0;
  // Closes everything and joins the I/O threads.
  virtual void Stop() = 0;
};

}  // namespace shoal::gateway
