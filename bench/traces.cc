// What tracing costs the serving path (make bench-traces →
// docs/bench/traces.json): closed-loop /v1/embeddings load on the identity
// runtime (a serving-plane measurement: no model work hides the cost) with
// tracing off, with every request traced to a collector that accepts, and
// with every request traced to a collector that hangs. Each configuration
// starts its own cluster (nats-server, worker, gateway in this process);
// rounds alternate the three, and each figure is the median of --repeats.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench_cluster.h"
#include "figures.h"
#include "loadtest/load_generator.h"
#include "support/scripted_http_server.h"

namespace shoal::bench {
namespace {

struct Options {
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/traces.json";
  int repeats = 3;
  int connections = 32;
  int seconds = 5;
};

struct Round {
  double rps = 0, p50_ms = 0, p99_ms = 0;
};

// One round of load on a fresh cluster whose gateway and worker export to
// `collector` (empty: tracing off).
Round Measure(const Options& o, const std::string& collector, int round) {
  ModelSpec spec;
  spec.id = "bench/identity";
  spec.runtime = "identity";
  spec.task = Task::kEncode;
  spec.runtime_options_json = R"({"dim": 384})";
  spec.pinned = true;
  spec.batching.max_batch_requests = 64;
  worker::WorkerOptions wo;
  wo.otlp_endpoint = collector;
  gateway::GatewayOptions go;
  go.otlp_endpoint = collector;
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("shoal-traces-bench-" + std::to_string(::getpid()) + "-" + std::to_string(round));
  auto cluster = BenchCluster::Start("traces", dir, {spec}, wo, go);
  if (!cluster) std::exit(1);
  loadtest::LoadSpec load;
  load.port = cluster->port();
  load.path = "/v1/embeddings";
  load.content_type = "application/json";
  load.body = nlohmann::json{{"model", spec.id}, {"input", "a sentence of a few words to embed"}}.dump();
  load.connections = o.connections;
  load.duration = std::chrono::seconds(o.seconds);
  const loadtest::LoadResult r = loadtest::RunLoad(load);
  if (r.errors > 0) std::fprintf(stderr, "traces: %llu errors\n", static_cast<unsigned long long>(r.errors));
  cluster.reset();
  std::filesystem::remove_all(dir);
  return {r.requests_per_s, r.Percentile(50), r.Percentile(99)};
}

int Run(const Options& o) {
  testing::ScriptedHttpServer accepting(
      {{"/v1/traces", testing::ScriptedHttpServer::Reply(200, "application/json", "{}")}});
  testing::ScriptedHttpServer hung({{"/v1/traces", std::string(testing::ScriptedHttpServer::kHang)}});
  const std::pair<const char*, std::string> configs[] = {
      {"off", ""},
      {"traced", "http://127.0.0.1:" + std::to_string(accepting.port())},
      {"traced_hung_collector", "http://127.0.0.1:" + std::to_string(hung.port())},
  };
  std::map<std::string, std::vector<Round>> rounds;
  std::printf("Tracing's cost: /v1/embeddings, identity runtime, %d connections, %d s a round, %d rounds\n",
              o.connections, o.seconds, o.repeats);
  int n = 0;
  for (int rep = 0; rep < o.repeats; ++rep) {
    for (const auto& [name, url] : configs) {
      const Round r = Measure(o, url, n++);
      std::fprintf(stderr, "  round %d %-22s %8.0f req/s  p50 %.2f ms  p99 %.2f ms\n", rep + 1, name, r.rps, r.p50_ms,
                   r.p99_ms);
      rounds[name].push_back(r);
    }
  }
  std::map<std::string, double> figures;
  std::printf("%-22s %10s %9s %9s\n", "tracing", "req/s", "p50 ms", "p99 ms");
  for (const auto& [name, url] : configs) {
    std::vector<double> rps, p50, p99;
    for (const Round& r : rounds[name]) {
      rps.push_back(r.rps);
      p50.push_back(r.p50_ms);
      p99.push_back(r.p99_ms);
    }
    figures[std::string(name) + "_rps"] = Median(rps);
    figures[std::string(name) + "_p50_ms"] = Median(p50);
    figures[std::string(name) + "_p99_ms"] = Median(p99);
    std::printf("%-22s %10.0f %9.2f %9.2f\n", name, Median(rps), Median(p50), Median(p99));
  }
  figures["traced_over_off_rps"] = figures["traced_rps"] / figures["off_rps"];
  figures["hung_over_off_rps"] = figures["traced_hung_collector_rps"] / figures["off_rps"];
  std::printf("traced / off: %.3f of the throughput; with a hung collector: %.3f\n", figures["traced_over_off_rps"],
              figures["hung_over_off_rps"]);
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"What tracing costs the serving path"};
  app.add_option("--out", o.out, "the figures (JSON)")->capture_default_str();
  app.add_option("--repeats", o.repeats, "rounds per configuration (the median is kept)")->capture_default_str();
  app.add_option("--connections", o.connections, "closed-loop connections")->capture_default_str();
  app.add_option("--seconds", o.seconds, "measured seconds a round")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
