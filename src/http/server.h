// Server: HTTP/1.1 with keep-alive on Boost.Beast, over the gateway's
// event loops (lanes).
//
// Each loop has its own acceptor on the same port (SO_REUSEPORT: the kernel
// spreads connections), so a connection lives on one loop and needs no
// strand. A connection is a coroutine: read a request, hand it to the
// handler with the loop's lane number, wait for the Responder (callable from
// any thread; it posts back to the connection's loop), write, repeat.
//
// With a certificate and key the same sessions run over TLS (Beast's
// ssl_stream over the TCP stream): the handshake first, then the same
// request loop; the plain path does not pay for it.
//
// A body over `max_body_bytes` is answered 413 PAYLOAD_TOO_LARGE without
// reading it; a malformed request 400 INVALID_INPUT; both close the
// connection.
//
// Slow and idle clients are bounded apart: a kept-alive connection may wait
// `idle_timeout` for the first byte of its next request, and once it has
// come, the request's head (request line and headers) must arrive within
// `header_timeout` or the connection is closed; so a client that sends half
// a request holds its socket seconds, not minutes. At most `max_connections`
// are open at once, over every loop: past it a new connection is answered
// 503 OVERLOADED ("too many connections") and closed, and the soft limit on
// open files is raised to the hard one at Start so the cap is what binds.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/event_loop.h"
#include "common/status.h"
#include "http/http.h"

namespace shoal::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  int io_threads = 2;  // lanes: the gateway runs one loop per I/O thread
  size_t max_body_bytes = 16 * 1024 * 1024;
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(120);
  std::chrono::milliseconds header_timeout = std::chrono::seconds(10);
  size_t max_connections = 10000;  // 0: no cap
  // Both set: HTTPS only (TLS 1.2 or later), with this certificate chain and
  // private key (PEM). A file that cannot be loaded fails Start, naming it.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class Server {
 public:
  using Handler = std::function<void(size_t lane, Request&&, Responder)>;

  // Listens on every loop; the loops must outlive the server.
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                   std::vector<EventLoop*> loops, Handler handler);
  virtual ~Server() = default;

  virtual int port() const = 0;
  // Connections open now, over every loop.
  virtual size_t connections() const = 0;
  // Closes the listening sockets; open connections carry on until their
  // loops stop.
  virtual void StopAccepting() = 0;
  // Takes no new request (one on a kept-alive connection is answered 503
  // NO_CAPACITY, and the connection closed) and waits until every request
  // taken has its response written, or `deadline`; true when all have.
  virtual bool Drain(SteadyClock::time_point deadline) = 0;
};

}  // namespace shoal::http
