// Priority classes (issue 24): what a flood of batch work does to
// interactive latency. One embedder (MiniLM-L6 shape, native f32) through
// the whole serving path (gateway → JetStream → worker); interactive
// clients send one-sentence /v1/embeddings requests at a fixed rate (open
// loop: latency counts from when a request was due) while, in turn:
//   alone        nothing else runs;
//   batch flood  closed-loop clients keep 32-sentence requests in flight as
//                X-Shoal-Priority: batch;
//   one class    the same flood, sent without the header (what a queue
//                without priority classes does).
// Each figure is the median of --repeats rounds; the flood's items/s shows
// that batch work still fills what interactive work leaves.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin/model_directory.h"
#include "bench_cluster.h"
#include "figures.h"
#include "loadtest/load_generator.h"

namespace shoal::bench {
namespace {

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/priority.json";
  std::string models_dir;
  int repeats = 3;
  double rate = 20;       // interactive requests/s
  int flood_clients = 4;  // batch requests in flight
  int seconds = 10;       // measured, per round
  int threads = 2;
};

std::string EmbeddingsBody(int sentences, int seed) {
  nlohmann::json input = nlohmann::json::array();
  for (int i = 0; i < sentences; ++i) {
    input.push_back("the river mill " + std::to_string(seed + i) +
                    " grinds grain for the village every morning before the market opens");
  }
  return nlohmann::json{{"model", "bench/minilm"}, {"input", input}}.dump();
}

struct RoundResult {
  double p50_ms = 0, p99_ms = 0;
  double flood_items_per_s = 0;
  uint64_t errors = 0;
};

// One round: the interactive load, with a flood of `flood` class beside it
// ("" for none, else "batch" or "interactive").
RoundResult RunRound(const Options& o, int port, const std::string& flood) {
  loadtest::LoadSpec interactive;
  interactive.port = port;
  interactive.path = "/v1/embeddings";
  interactive.content_type = "application/json";
  interactive.body = EmbeddingsBody(1, 0);
  interactive.connections = 8;
  interactive.rate = o.rate;
  interactive.warmup = std::chrono::milliseconds(1000);
  interactive.duration = std::chrono::seconds(o.seconds);

  loadtest::LoadSpec batch = interactive;
  batch.body = EmbeddingsBody(32, 1000);
  batch.connections = o.flood_clients;
  batch.rate = 0;  // closed loop
  batch.warmup = std::chrono::milliseconds(500);
  batch.duration = std::chrono::seconds(o.seconds + 1);
  batch.drain = std::chrono::seconds(10);
  if (flood == "batch") batch.headers.emplace_back("X-Shoal-Priority", "batch");

  RoundResult r;
  loadtest::LoadResult flooded;
  std::thread flood_thread;
  if (!flood.empty()) flood_thread = std::thread([&] { flooded = loadtest::RunLoad(batch); });
  const loadtest::LoadResult measured = loadtest::RunLoad(interactive);
  if (flood_thread.joinable()) flood_thread.join();
  r.p50_ms = measured.Percentile(50);
  r.p99_ms = measured.Percentile(99);
  r.errors = measured.errors + flooded.errors;
  r.flood_items_per_s = flood.empty() ? 0 : flooded.ok_in_window * 32.0 / (o.seconds + 1);
  return r;
}

int Run(const Options& o) {
  const std::string models = GenerateBenchModels(o.source_dir, o.models_dir, "priority", "minilm-l6");
  if (models.empty()) return 1;
  auto spec = admin::SpecFromDirectory(models + "/minilm-l6", "bench/minilm");
  if (!spec.ok()) return std::fprintf(stderr, "%s\n", spec.status().ToString().c_str()), 1;
  spec->pinned = true;
  spec->batching.max_batch_requests = 32;
  worker::WorkerOptions wo;
  wo.threads_per_executor = o.threads;
  const std::string dir = std::filesystem::temp_directory_path() / ("shoal-priority-bench-" + std::to_string(::getpid()));
  auto cluster = BenchCluster::Start("priority", dir, {*spec}, wo);
  if (!cluster) return 1;
  const int port = cluster->port();

  std::printf("Interactive latency beside batch work: MiniLM-L6 f32, %.0f interactive requests/s (1 sentence), "
              "%d flood clients (32 sentences), %d s rounds, median of %d\n",
              o.rate, o.flood_clients, o.seconds, o.repeats);
  std::printf("%-12s %10s %10s %16s\n", "flood", "p50 ms", "p99 ms", "flood items/s");
  std::map<std::string, double> figures;
  const std::pair<const char*, const char*> cases[] = {{"alone", ""}, {"batch", "batch"}, {"one_class", "interactive"}};
  for (const auto& [name, flood] : cases) {
    std::vector<double> p50, p99, items;
    for (int i = 0; i < o.repeats; ++i) {
      std::fprintf(stderr, "priority: %s, round %d/%d\n", name, i + 1, o.repeats);
      const RoundResult r = RunRound(o, port, flood);
      if (r.errors) std::fprintf(stderr, "priority: %s: %llu errors\n", name, static_cast<unsigned long long>(r.errors));
      p50.push_back(r.p50_ms);
      p99.push_back(r.p99_ms);
      items.push_back(r.flood_items_per_s);
    }
    const std::string k = name;
    figures[k + "_p50_ms"] = Median(p50);
    figures[k + "_p99_ms"] = Median(p99);
    if (*flood) figures[k + "_flood_items_per_s"] = Median(items);
    std::printf("%-12s %10.1f %10.1f %16.0f\n", name, figures[k + "_p50_ms"], figures[k + "_p99_ms"], Median(items));
    std::fflush(stdout);
  }
  figures["interactive_p99_with_batch_over_without"] = figures["batch_p99_ms"] / figures["alone_p99_ms"];
  figures["interactive_p99_one_class_over_without"] = figures["one_class_p99_ms"] / figures["alone_p99_ms"];
  std::printf("interactive_p99_with_batch_over_without %.2f (one class: %.2f)\n",
              figures["interactive_p99_with_batch_over_without"], figures["interactive_p99_one_class_over_without"]);
  cluster.reset();
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Interactive latency beside a flood of batch work, with and without priority classes"};
  app.add_option("--out", o.out, "where the figures go");
  app.add_option("--models", o.models_dir, "the generated bench models (default: <source>/build-models)");
  app.add_option("--repeats", o.repeats, "rounds per figure (median kept)");
  app.add_option("--rate", o.rate, "interactive requests per second");
  app.add_option("--flood-clients", o.flood_clients, "batch requests kept in flight");
  app.add_option("--seconds", o.seconds, "measured seconds per round");
  app.add_option("--threads", o.threads, "threads per executor");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
