// The residency benchmark (issue 5): a fleet of 50 models on 3 workers whose
// memory budgets hold only part of it, under Zipf traffic — how often a
// request finds its model loaded, how much loading and evicting it costs, and
// the latency — for each eviction policy on the same trace; and the cold load
// of a ~100 MB model from local disk.
//
// Fleet: 50 identity models (labeled as such: the identity runtime stands in
// for real ones) whose sizes are drawn seeded, log-normal, median 40 MB,
// clipped to 10–150 MB, and whose loads take what reading that much takes
// (50 ms + 3 ms per MB: about what the native engine needs per MB from the
// page cache plus its fixed cost — see the cold-load figure this benchmark
// measures). A batch costs 2 ms + 10 µs per token. Popularity: Zipf s = 1.1
// over a seeded permutation, so popularity is independent of size.
// Budgets: each worker may hold --budget-fraction of the fleet's bytes.
// Requests: open loop at --rate, seeded, the same sequence for every policy;
// after --warmup-s the next --measure-s are measured. A request is a hit when
// its response says X-Shoal-Cold-Start: 0 (its item did not wait for a load).
//
// Cold load: the native engine loads scripts/make-test-models' bert-100mb
// (8 layers, hidden 384, 104 MB of F32 weights) after its files are dropped
// from the page cache (posix_fadvise DONTNEED) and answers one request, five
// times; the median. F32 weights are used where they are mapped, so the load
// alone reads little: the first request pays for the pages it touches, and
// the figure includes it (the load alone is printed beside it).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "common/subprocess.h"
#include "figures.h"
#include "loadtest/load_generator.h"
#include "queue/catalog_watch.h"
#include "queue/control_plane.h"
#include "queue/nats_server.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"
#include "runtime/runtime.h"
#include "runtime/registry/registry.h"

namespace shoal::bench {
using namespace loadtest;  // RunLoad, LoadSpec, MixEntry, Percentile
namespace {

struct Options {
  std::string shoal = SHOAL_BINARY;
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/residency.json";
  std::string models_dir;  // the generated bench models (default: <source>/build-models)
  int workers = 3;
  int models = 50;
  double rate = 150;
  int warmup_s = 30;
  int measure_s = 60;
  double budget_fraction = 0.2;
  std::vector<std::string> policies = {"cost-aware", "lru", "count"};
  uint64_t seed = 1;
  bool keep_dir = false;
};

struct FleetModel {
  std::string id;
  uint32_t mb = 0;
  double weight = 0;  // Zipf
};

std::vector<FleetModel> MakeFleet(const Options& o) {
  std::mt19937_64 rng(o.seed);
  std::lognormal_distribution<double> size(std::log(40.0), 0.8);
  std::vector<FleetModel> fleet(o.models);
  std::vector<int> rank(o.models);
  std::iota(rank.begin(), rank.end(), 1);
  std::shuffle(rank.begin(), rank.end(), rng);
  for (int i = 0; i < o.models; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "fleet/m%02d", i);
    fleet[i].id = id;
    fleet[i].mb = static_cast<uint32_t>(std::clamp(size(rng), 10.0, 150.0));
    fleet[i].weight = 1.0 / std::pow(rank[i], 1.1);
  }
  return fleet;
}

std::string Profile(const FleetModel& m) {
  return "id: " + m.id + "\nruntime: identity\ndescription: \"residency benchmark model (identity)\"\n" +
         "batching: {max_batch_tokens: 16384, max_batch_requests: 32, max_batch_wait_ms: 2}\n" +
         "queue: {ack_wait_ms: 30000, max_deliver: 5}\n" + "identity: {dim: 64, us_per_batch: 2000, " +
         "us_per_token: 10, memory_mb: " + std::to_string(m.mb) + ", load_ms: " + std::to_string(50 + 3 * m.mb) +
         "}\n";
}

// --- cold load of a ~100 MB model ------------------------------------------

void DropFromPageCache(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// Median ms of five native loads plus a first request, each from a dropped
// page cache; NAN when the model cannot be made or loaded. `load_only_ms`:
// the median of the loads alone.
double ColdLoadMs(const Options& o, double* megabytes, double* load_only_ms) {
  const std::string models_dir = GenerateBenchModels(o.source_dir, o.models_dir, "residency");
  if (models_dir.empty()) return NAN;
  ModelSpec spec;
  spec.id = "bench/bert-100mb";
  spec.runtime = "native";
  spec.path = models_dir + "/bert-100mb";
  std::vector<double> ms, load_ms;
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  for (int i = 0; i < 5; ++i) {
    DropFromPageCache(spec.path);
    const auto t0 = std::chrono::steady_clock::now();
    auto model = FindRuntime("native")->Load(*ModelConfig::FromSpec(spec), LoadContext{});
    if (!model.ok()) {
      std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
      return NAN;
    }
    load_ms.push_back(since(t0));
    EncodeInput in{.text = "the first request after a cold load"};
    EncodeOutput out;
    if (Status s = (*model)->Encode({&in, 1}, {&out, 1}); !s.ok() || !out.status.ok()) return NAN;
    ms.push_back(since(t0));
    *megabytes = (*model)->memory_bytes() / 1e6;
    std::fprintf(stderr, "  cold load %d: %.0f ms, with the first request %.0f ms (%.0f MB)\n", i + 1,
                 load_ms.back(), ms.back(), *megabytes);
  }
  *load_only_ms = Median(load_ms);
  return Median(ms);
}

// --- one policy on the fleet -------------------------------------------------

struct PolicyRun {
  double hit_rate = NAN;  // measured requests that did not wait for a load
  double loads_per_min = NAN, evictions_per_min = NAN;
  double p50_ms = NAN, p99_ms = NAN, hit_p99_ms = NAN;
  double achieved = 0;
  uint64_t errors = 0, thrashing = 0;
};

std::pair<uint64_t, uint64_t> Counters(queue::WorkerRegistry& registry, uint64_t* thrashing = nullptr) {
  uint64_t loads = 0, evictions = 0;
  for (const auto& w : registry.Live()) {
    loads += w.loads;
    evictions += w.evictions;
    if (thrashing) *thrashing += w.thrashing.size();
  }
  return {loads, evictions};
}

Result<PolicyRun> RunPolicy(const Options& o, const std::string& policy, const std::vector<FleetModel>& fleet,
                            uint64_t budget_bytes) {
  char tmpl[] = "/tmp/shoal-residency-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto nats = queue::NatsServer::Start({.data_dir = dir + "/nats"});
  if (!nats.ok()) return nats.status();
  const std::string url = (*nats)->url();
  auto control = queue::ControlPlane::Connect(url, "residency-bench");
  if (!control.ok()) return control.status();
  SHOAL_RETURN_IF_ERROR(queue::EnsureWorkStream(control->js.get(), "default", {}));
  for (const auto& m : fleet) {
    auto spec = ModelSpec::Parse(Profile(m));
    if (!spec.ok()) return spec.status();
    spec->memory_bytes = uint64_t{m.mb} << 20;  // what registration would measure
    SHOAL_RETURN_IF_ERROR(queue::PutModel(control->models.get(), *spec));
  }
  uint64_t total = 0;
  for (const auto& m : fleet) total += uint64_t{m.mb} << 20;
  const size_t max_models = std::max<size_t>(1, budget_bytes / (total / fleet.size()));
  std::vector<Subprocess> procs;
  for (int w = 0; w < o.workers; ++w) {
    std::vector<std::string> argv = {o.shoal,          "--log-level",     o.keep_dir ? "info" : "warn",
                                     "worker",         "--nats",          url,
                                     "--id",           "rw" + std::to_string(w),
                                     "--memory-budget", std::to_string(budget_bytes),
                                     "--eviction",     policy};
    if (policy == "count") argv.insert(argv.end(), {"--max-models", std::to_string(max_models)});
    auto p = Subprocess::Spawn(argv, dir + "/worker-" + std::to_string(w) + ".log");
    if (!p.ok()) return p.status();
    procs.push_back(std::move(p).value());
  }
  auto port = FreeLoopbackPort();
  if (!port.ok()) return port.status();
  auto gw = Subprocess::Spawn({o.shoal, "--log-level", "warn", "gateway", "--nats", url, "--port",
                               std::to_string(*port), "--io-threads", "1", "--timeout-ms", "30000"},
                              dir + "/gateway.log");
  if (!gw.ok()) return gw.status();
  procs.push_back(std::move(gw).value());
  if (!WaitAccepting(*port)) return Status(Code::kInternal, "the gateway did not start (logs in " + dir + ")");
  auto registry = queue::WorkerRegistry::Open(control->workers.get(), std::chrono::seconds(4));
  if (!registry.ok()) return registry.status();
  std::this_thread::sleep_for(std::chrono::seconds(3));  // heartbeats: the gateway knows who serves what

  LoadSpec spec;
  spec.port = *port;
  spec.rate = o.rate;
  spec.connections = 256;
  spec.seed = o.seed;
  spec.warmup = std::chrono::seconds(o.warmup_s);
  spec.duration = std::chrono::seconds(o.measure_s);
  for (const auto& m : fleet) {
    spec.mix.push_back({"/v1/encode/" + m.id, "application/json",
                        R"({"items":[{"text":"a short query about the fleet of models"}]})", m.weight});
  }
  // The heartbeat counters at the start and the end of the measured window.
  std::pair<uint64_t, uint64_t> at_start;
  std::thread sampler([&] {
    std::this_thread::sleep_for(std::chrono::seconds(o.warmup_s));
    at_start = Counters(**registry);
  });
  std::fprintf(stderr, "residency: %s: %d s warm-up, %d s measured at %.0f req/s\n", policy.c_str(), o.warmup_s,
               o.measure_s, o.rate);
  const LoadResult r = RunLoad(spec);
  sampler.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // the last heartbeats
  PolicyRun run;
  const auto at_end = Counters(**registry, &run.thrashing);
  const double minutes = o.measure_s / 60.0;
  run.loads_per_min = (at_end.first - at_start.first) / minutes;
  run.evictions_per_min = (at_end.second - at_start.second) / minutes;
  run.achieved = r.requests_per_s;
  run.errors = r.errors;
  run.p50_ms = r.Percentile(50);
  run.p99_ms = r.Percentile(99);
  uint64_t hits = 0;
  LoadResult hit_only;
  for (size_t i = 0; i < r.cold_starts.size(); ++i) {
    if (r.cold_starts[i]) continue;
    ++hits;
    hit_only.latencies_ms.push_back(r.latencies_ms[i]);
  }
  run.hit_rate = r.cold_starts.empty() ? NAN : static_cast<double>(hits) / r.cold_starts.size();
  run.hit_p99_ms = hit_only.Percentile(99);
  for (auto& p : procs) p.Stop(SIGTERM, std::chrono::seconds(10));
  if (!o.keep_dir) std::filesystem::remove_all(dir);
  return run;
}

int Run(const Options& o) {
  const auto fleet = MakeFleet(o);
  uint64_t total = 0;
  uint32_t largest = 0;
  for (const auto& m : fleet) total += uint64_t{m.mb} << 20, largest = std::max(largest, m.mb);
  const uint64_t budget = static_cast<uint64_t>(o.budget_fraction * total);
  std::printf("residency benchmark: %d identity models, %.0f MB in all (largest %u MB), %d workers with "
              "%.0f MB each (%.0f %% of the fleet)\n",
              o.models, total / 1048576.0, largest, o.workers, budget / 1048576.0, 100 * o.budget_fraction);

  double cold_mb = 0, load_only_ms = NAN;
  const double cold_ms = ColdLoadMs(o, &cold_mb, &load_only_ms);
  std::printf("cold load, native engine, %.0f MB model from local disk (page cache dropped): %.0f ms to the "
              "first answer, %.0f ms to load (medians of 5)\n\n",
              cold_mb, cold_ms, load_only_ms);

  std::map<std::string, PolicyRun> runs;
  std::printf("%-11s %9s %9s %10s %10s %9s %9s %11s %7s %6s\n", "policy", "req/s", "hit rate", "loads/min",
              "evict/min", "p50 ms", "p99 ms", "hit p99 ms", "errors", "thrash");
  for (const auto& policy : o.policies) {
    auto run = RunPolicy(o, policy, fleet, budget);
    if (!run.ok()) {
      std::fprintf(stderr, "%s: %s\n", policy.c_str(), run.status().ToString().c_str());
      return 1;
    }
    runs[policy] = *run;
    std::printf("%-11s %9.0f %8.1f%% %10.1f %10.1f %9.1f %9.1f %11.1f %7llu %6llu\n", policy.c_str(), run->achieved,
                100 * run->hit_rate, run->loads_per_min, run->evictions_per_min, run->p50_ms, run->p99_ms,
                run->hit_p99_ms, static_cast<unsigned long long>(run->errors),
                static_cast<unsigned long long>(run->thrashing));
    std::fflush(stdout);
  }
  std::map<std::string, double> figures = {{"cold_load_ms_100mb", cold_ms}, {"cold_load_model_mb", cold_mb},
                                           {"cold_load_only_ms_100mb", load_only_ms},
                                           {"models", static_cast<double>(o.models)},
                                           {"workers", static_cast<double>(o.workers)},
                                           {"budget_fraction_per_worker", o.budget_fraction},
                                           {"rate", o.rate}};
  for (const auto& [policy, r] : runs) {
    std::string key = policy;
    std::replace(key.begin(), key.end(), '-', '_');
    figures[key + "_hit_rate"] = r.hit_rate;
    figures[key + "_loads_per_min"] = r.loads_per_min;
    figures[key + "_evictions_per_min"] = r.evictions_per_min;
    figures[key + "_p50_ms"] = r.p50_ms;
    figures[key + "_p99_ms"] = r.p99_ms;
  }
  if (runs.count("cost-aware")) {
    const PolicyRun& c = runs["cost-aware"];
    figures["warm_hit_rate"] = c.hit_rate;
    figures["loads_per_min"] = c.loads_per_min;
    figures["p99_ms"] = c.p99_ms;
    for (const char* peer : {"lru", "count"}) {
      if (!runs.count(peer)) continue;
      const double misses = 1 - c.hit_rate, peer_misses = 1 - runs[peer].hit_rate;
      figures[std::string("misses_ratio_") + peer + "_over_cost_aware"] = misses > 0 ? peer_misses / misses : NAN;
      std::printf("misses, %s / cost-aware: %.2f\n", peer, misses > 0 ? peer_misses / misses : NAN);
    }
  }
  if (!o.out.empty()) WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app("Residency benchmark: a fleet larger than memory, loaded on demand");
  app.add_option("--shoal", o.shoal, "the shoal binary")->capture_default_str();
  app.add_option("--out", o.out, "JSON results (empty: none)")->capture_default_str();
  app.add_option("--models-dir", o.models_dir, "generated bench models (default: <source>/build-models)");
  app.add_option("--workers", o.workers, "worker processes")->capture_default_str();
  app.add_option("--models", o.models, "models in the fleet")->capture_default_str();
  app.add_option("--rate", o.rate, "offered load, req/s")->capture_default_str();
  app.add_option("--warmup-s", o.warmup_s, "seconds before measuring")->capture_default_str();
  app.add_option("--measure-s", o.measure_s, "seconds measured")->capture_default_str();
  app.add_option("--budget-fraction", o.budget_fraction, "each worker's budget, as a fraction of the fleet's bytes")
      ->capture_default_str();
  app.add_option("--policies", o.policies, "eviction policies to compare")->capture_default_str();
  app.add_option("--seed", o.seed, "trace seed")->capture_default_str();
  app.add_flag("--keep-dir", o.keep_dir, "keep each run's directory (process logs)");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
