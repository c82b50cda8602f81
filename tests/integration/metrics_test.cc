// GET /metrics on a gateway: Prometheus text, the responses counted by route
// and status, latency by route, and routes as a bounded set of labels.
#include <gtest/gtest.h>

#include "gateway/gateway_metrics.h"
#include "support/http_client.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

TEST(GatewayMetrics, CountsResponsesByRouteAndStatus) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/embed", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  for (int i = 0; i < 3; ++i) {
    auto res = http.PostJson("/v1/embeddings", R"({"model":"test/embed","input":"one two"})");
    ASSERT_TRUE(res.ok() && res->status == 200);
  }
  auto missing = http.PostJson("/v1/embeddings", R"({"model":"no/such","input":"x"})");
  ASSERT_TRUE(missing.ok() && missing->status == 404);
  auto odd = http.Get("/no/such/route/with/a/random/name");
  ASSERT_TRUE(odd.ok() && odd->status == 404);

  auto scrape = http.Get("/metrics");
  ASSERT_TRUE(scrape.ok());
  EXPECT_EQ(scrape->status, 200);
  EXPECT_EQ(scrape->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = scrape->body;
  for (const char* line : {
           "# TYPE shoal_gateway_requests_total counter\n",
           "shoal_gateway_requests_total{route=\"/v1/embeddings\",code=\"200\"} 3\n",
           "shoal_gateway_requests_total{route=\"/v1/embeddings\",code=\"404\"} 1\n",
           "shoal_gateway_requests_total{route=\"other\",code=\"404\"} 1\n",
           "# TYPE shoal_gateway_request_seconds histogram\n",
           "shoal_gateway_request_seconds_count{route=\"/v1/embeddings\"} 4\n",
           "shoal_gateway_request_seconds_bucket{route=\"/v1/embeddings\",le=\"+Inf\"} 4\n",
           "shoal_gateway_in_flight 0\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
  EXPECT_EQ(text.find("random"), std::string::npos) << "raw paths never become labels";
}

TEST(GatewayMetrics, RoutesAreABoundedSetOfLabels) {
  using gateway::GatewayMetrics;
  EXPECT_EQ(GatewayMetrics::RouteLabel("/v1/encode/org/model-v1.5"), "/v1/encode");
  EXPECT_EQ(GatewayMetrics::RouteLabel("/v1/chat/completions"), "/v1/chat/completions");
  EXPECT_EQ(GatewayMetrics::RouteLabel("/v1/admin/models/x"), "/v1/admin");
  EXPECT_EQ(GatewayMetrics::RouteLabel("/v1/files/file-abc/content"), "/v1/files");
  EXPECT_EQ(GatewayMetrics::RouteLabel("/v1/extract/org/ner"), "/v1/extract");
  EXPECT_EQ(GatewayMetrics::RouteLabel("/v1/embeddingsX"), "other");
  EXPECT_EQ(GatewayMetrics::RouteLabel("/"), "other");
}

}  // namespace
}  // namespace shoal::testing
