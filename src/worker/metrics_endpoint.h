// MetricsEndpoint: GET /metrics, /healthz (the process runs) and /readyz
// (it takes work: 503 once it drains) over HTTP for a process that has no
// other HTTP side — the worker; what orchestrators probe. It runs its own event loop with the
// HTTP server the gateway uses (http/server.h), so a scrape never waits
// behind the worker's intake loop, and the intake loop never behind a scrape.
//
// Threading: `render` and `ready` run on the endpoint's loop thread, once
// per request.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/event_loop.h"
#include "common/status.h"

namespace shoal::http {
class Server;
}

namespace shoal::worker {

class MetricsEndpoint {
 public:
  // Listens on host:port (0: any free port).
  static Result<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& host, int port, std::function<std::string()> render,
      std::function<bool()> ready = [] { return true; });
  ~MetricsEndpoint();  // stops listening, then the loop

  int port() const;

 private:
  MetricsEndpoint() = default;
  EventLoop loop_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace shoal::worker
