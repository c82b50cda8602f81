#include "worker/metrics_endpoint.h"

#include "http/http.h"
#include "http/server.h"

namespace shoal::worker {

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(const std::string& host, int port,
                                                                std::function<std::string()> render,
                                                                std::function<bool()> ready) {
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  e->loop_.Start();
  http::ServerOptions options;
  options.host = host;
  options.port = port;
  options.io_threads = 1;
  options.max_body_bytes = 4096;  // scrapes have no body
  auto server = http::Server::Start(
      options, {&e->loop_},
      [render = std::move(render), ready = std::move(ready)](size_t, http::Request&& req,
                                                             http::Responder respond) {
        if (req.method == "GET" && req.path == "/metrics") {
          http::Response r;
          r.content_type = "text/plain; version=0.0.4; charset=utf-8";
          r.body = render();
          return respond(std::move(r));
        }
        if (req.method == "GET" && req.path == "/healthz")
          return respond(http::JsonResponse(200, "{\"status\":\"ok\"}"));
        if (req.method == "GET" && req.path == "/readyz") {
          if (ready()) return respond(http::JsonResponse(200, "{\"status\":\"ready\"}"));
          return respond(
              http::ErrorResponse(Status(Code::kNoCapacity, "draining: takes no more work"), ""));
        }
        respond(http::ErrorResponse(
            Status(Code::kNotFound, "a worker serves GET /metrics, /healthz and /readyz only"),
            ""));
      });
  if (!server.ok())
    return Status(server.status().code(), "metrics endpoint: " + server.status().message());
  e->server_ = std::move(server).value();
  return e;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (server_) server_->StopAccepting();
  loop_.Stop();
  server_.reset();
}

int MetricsEndpoint::port() const { return server_->port(); }

}  // namespace shoal::worker
