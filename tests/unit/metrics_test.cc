// The metrics registry: the Prometheus text format, byte for byte, cumulative
// histogram buckets, label escaping, and the bound on series per family.
#include "common/metrics.h"

#include <gtest/gtest.h>

#include <thread>

#include "worker/worker_metrics.h"

namespace shoal {
namespace {

TEST(Metrics, RendersThePrometheusTextFormat) {
  MetricsRegistry r;
  auto& requests = r.AddCounter("shoal_requests_total", "Requests answered.", {"route", "code"});
  requests.With({"/v1/embeddings", "200"}).Inc();
  requests.With({"/v1/embeddings", "200"}).Inc(2);
  requests.With({"/v1/rerank", "400"}).Inc();
  r.AddGauge("shoal_in_flight", "Requests in flight.").With({}).Set(7);
  auto& latency = r.AddHistogram("shoal_latency_seconds", "Request latency.", {0.01, 0.1}, {"route"});
  auto& h = latency.With({"/v1/embeddings"});
  h.Observe(0.005);
  h.Observe(0.01);  // on a bound: that bucket (le is "less or equal")
  h.Observe(0.5);
  EXPECT_EQ(r.Render(),
            "# HELP shoal_requests_total Requests answered.\n"
            "# TYPE shoal_requests_total counter\n"
            "shoal_requests_total{route=\"/v1/embeddings\",code=\"200\"} 3\n"
            "shoal_requests_total{route=\"/v1/rerank\",code=\"400\"} 1\n"
            "# HELP shoal_in_flight Requests in flight.\n"
            "# TYPE shoal_in_flight gauge\n"
            "shoal_in_flight 7\n"
            "# HELP shoal_latency_seconds Request latency.\n"
            "# TYPE shoal_latency_seconds histogram\n"
            "shoal_latency_seconds_bucket{route=\"/v1/embeddings\",le=\"0.01\"} 2\n"
            "shoal_latency_seconds_bucket{route=\"/v1/embeddings\",le=\"0.1\"} 2\n"
            "shoal_latency_seconds_bucket{route=\"/v1/embeddings\",le=\"+Inf\"} 3\n"
            "shoal_latency_seconds_sum{route=\"/v1/embeddings\"} 0.515\n"
            "shoal_latency_seconds_count{route=\"/v1/embeddings\"} 3\n");
}

TEST(Metrics, LabelValuesAreEscaped) {
  MetricsRegistry r;
  r.AddCounter("c", "h", {"model"}).With({"a\"b\\c\nd"}).Inc();
  EXPECT_NE(r.Render().find("c{model=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos) << r.Render();
}

TEST(Metrics, SeriesPerFamilyAreBounded) {
  MetricsRegistry r;
  auto& f = r.AddCounter("per_model_total", "h", {"model"}, /*max_series=*/4);
  for (int i = 0; i < 100; ++i) f.With({"m" + std::to_string(i)}).Inc();
  const std::string text = r.Render();
  size_t series = 0;
  for (size_t at = text.find("per_model_total{"); at != std::string::npos; at = text.find("per_model_total{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, 4u) << text;
  EXPECT_NE(text.find("per_model_total{model=\"other\"} 97\n"), std::string::npos) << text;
  EXPECT_EQ(&r.AddCounter("per_model_total", "other help"), &f) << "a name registers once";
}

TEST(Metrics, UpdatesFromManyThreadsAddUp) {
  MetricsRegistry r;
  Counter& c = r.AddCounter("n_total", "h").With({});
  Histogram& h = r.AddHistogram("x", "h", ExponentialBuckets(1, 2, 4)).With({});
  EXPECT_EQ(h.bounds(), (std::vector<double>{1, 2, 4, 8}));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc();
        h.Observe(3);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(h.CumulativeCounts(), (std::vector<uint64_t>{0, 0, 40000, 40000, 40000}));
  EXPECT_EQ(h.sum(), 120000);
}

TEST(WorkerMetrics, AdapterLabelsAreBoundedPerModel) {
  worker::WorkerMetrics m;
  const worker::ModelSeries& a = m.For("org/a");
  for (int i = 0; i < 40; ++i) a.loras->Record("lora-" + std::to_string(i), 10);
  a.loras->Record("lora-0", 5);    // a named one stays named
  a.loras->Record("lora-39", 1);  // a late one stays "other"
  m.For("org/b").loras->Record("lora-39", 2);  // the bound is per model
  const std::string page = m.Render({});
  EXPECT_NE(page.find("shoal_worker_lora_items_total{model=\"org/a\",lora=\"lora-0\"} 2\n"), std::string::npos) << page;
  EXPECT_NE(page.find("shoal_worker_lora_tokens_total{model=\"org/a\",lora=\"lora-0\"} 15\n"), std::string::npos);
  EXPECT_NE(page.find("shoal_worker_lora_items_total{model=\"org/a\",lora=\"lora-31\"} 1\n"), std::string::npos);
  EXPECT_EQ(page.find("lora=\"lora-32\""), std::string::npos) << "the 33rd adapter has no label of its own";
  EXPECT_NE(page.find("shoal_worker_lora_items_total{model=\"org/a\",lora=\"other\"} 9\n"), std::string::npos);
  EXPECT_NE(page.find("shoal_worker_lora_tokens_total{model=\"org/a\",lora=\"other\"} 81\n"), std::string::npos);
  EXPECT_NE(page.find("shoal_worker_lora_items_total{model=\"org/b\",lora=\"lora-39\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace shoal
