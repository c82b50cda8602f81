// GatewayMetrics: what a gateway counts, served at GET /metrics in the
// Prometheus text format (common/metrics.h):
//
//   shoal_gateway_requests_total{route,code}   responses by route and HTTP status
//   shoal_gateway_errors_total{route,error}    error responses by route and error
//                                              code (INVALID_INPUT, OVERLOADED, …)
//   shoal_gateway_request_seconds{route}       time from a request's arrival to its
//                                              response head (for a stream: the
//                                              first part), histogram
//   shoal_gateway_in_flight                    requests waiting for results now
//   shoal_gateway_hedged_items_total           copies of items also sent straight
//                                              to a worker while their stream or
//                                              consumer had no leader
//                                              (queue_dispatcher.h)
//
// `route` is one of the gateway's routes ("/v1/embeddings", "/v1/encode", …)
// or "other", never the raw path, so the series stay few whatever clients
// send. Names and labels are documented in docs/operations.md.
//
// Threading: Observe is called from any lane; the counters are atomic.
#pragma once

#include <string_view>

#include "common/metrics.h"
#include "http/http.h"

namespace shoal::gateway {

class GatewayMetrics {
 public:
  GatewayMetrics();

  // A response under `route` (RouteLabel) whose head went out `seconds`
  // after its request arrived.
  void Observe(std::string_view route, const http::Response& r, double seconds);

  // The body of GET /metrics, with `in_flight` requests now and `more`
  // (series rendered elsewhere: batch jobs') after.
  http::Response Render(size_t in_flight, std::string_view more = {});

  // For series registered elsewhere (the span exporter's).
  MetricsRegistry& registry() { return registry_; }
  Counter& hedged_items() { return hedged_items_; }

  // The route label of a request path.
  static std::string_view RouteLabel(std::string_view path);

 private:
  MetricsRegistry registry_;
  Family<Counter>& requests_;
  Family<Counter>& errors_;
  Family<Histogram>& seconds_;
  Gauge& in_flight_;
  Counter& hedged_items_;
};

}  // namespace shoal::gateway
