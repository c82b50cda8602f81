#include "gateway/gateway_metrics.h"

#include <string>

namespace shoal::gateway {

GatewayMetrics::GatewayMetrics()
    : requests_(registry_.AddCounter("shoal_gateway_requests_total", "Responses by route and HTTP status.",
                                     {"route", "code"})),
      errors_(registry_.AddCounter("shoal_gateway_errors_total", "Error responses by route and error code.",
                                   {"route", "error"})),
      seconds_(registry_.AddHistogram("shoal_gateway_request_seconds",
                                      "Time from a request's arrival to its response head.",
                                      ExponentialBuckets(0.0005, 2, 16), {"route"})),
      in_flight_(registry_.AddGauge("shoal_gateway_in_flight", "Requests waiting for their results.").With({})),
      hedged_items_(registry_
                        .AddCounter("shoal_gateway_hedged_items_total",
                                    "Copies of work items also sent straight to a worker: while their work stream "
                                    "stored nothing (between leaders), or, for idle workers, while stored ones went "
                                    "undelivered.")
                        .With({})) {}

std::string_view GatewayMetrics::RouteLabel(std::string_view path) {
  // Routes with a model in the path count under their prefix.
  static constexpr std::string_view kPrefixes[] = {"/v1/encode/",   "/v1/score/", "/v1/extract/", "/v1/tokenize/",
                                                   "/v1/generate/", "/v1/admin/", "/v1/files/",
                                                   "/v1/batches/"};
  for (std::string_view p : kPrefixes) {
    if (path.starts_with(p)) return p.substr(0, p.size() - 1);
  }
  static constexpr std::string_view kExact[] = {"/v1/embeddings", "/v1/rerank", "/v1/chat/completions",
                                                "/v1/completions", "/v1/models", "/v1/files", "/v1/batches", "/v1/cluster",
                                                "/v1/dashboard",
                                                "/healthz", "/readyz", "/metrics"};
  for (std::string_view e : kExact) {
    if (path == e) return e;
  }
  return "other";
}

void GatewayMetrics::Observe(std::string_view route, const http::Response& r, double seconds) {
  const std::string label(route);
  requests_.With({label, std::to_string(r.status)}).Inc();
  if (!r.error_code.empty()) errors_.With({label, std::string(r.error_code)}).Inc();
  seconds_.With({label}).Observe(seconds);
}

http::Response GatewayMetrics::Render(size_t in_flight, std::string_view more) {
  in_flight_.Set(static_cast<double>(in_flight));
  http::Response r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = registry_.Render();
  r.body += more;
  return r;
}

}  // namespace shoal::gateway
