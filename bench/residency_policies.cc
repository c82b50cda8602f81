// The residency benchmark: one seeded synthetic trace replayed through the
// three eviction policies (cost-aware GDSF, LRU, Ollama-style count limit)
// of worker/residency_policy.h, so they see the same requests.
//
// Fleet: 50 models, sizes log-normal (median 60 MB) clipped to 20–400 MB, so
// small models are common and a few are big; load cost 3 ms per MB + 50 ms.
// Popularity: Zipf s = 1.1 over a seeded random permutation of the models,
// so popularity is independent of size. Arrivals: Poisson at --rate for
// --minutes of simulated time. Budget: --budget-fraction of the total size.
// The count policy may hold budget / mean size models (as an operator would
// set OLLAMA_MAX_LOADED_MODELS for the device).
// --drift: every 30 simulated s the popularity ranks shift by kDriftShift
// models, so the hot set changes in phases.
//
// Only residency is simulated: a miss loads at once (the load takes no
// simulated time) and nothing is ever busy. "Warm" figures leave out the
// first simulated minute, when every policy fills an empty device. At the
// defaults the loads alone would take far longer than the simulated time
// (load-s/m well over 60): the figures compare policies on one trace; they
// do not predict what a device would serve.
// Hit rate alone would flatter cost-aware, which trades more misses for
// cheap ones, so each policy's bytes and load time per minute are printed
// beside it.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "figures.h"
#include "worker/residency_policy.h"

namespace shoal::bench {
namespace {

using worker::EvictionPolicyKind;

constexpr int kModels = 50;
constexpr double kMinMb = 20, kMaxMb = 400, kMedianMb = 60, kSizeSigma = 0.9;
constexpr double kLoadMsPerMb = 3, kLoadMsFixed = 50;
constexpr double kZipfS = 1.1;
constexpr double kDriftPeriodS = 30;
constexpr int kDriftShift = 7;
constexpr double kWarmupS = 60;
constexpr uint64_t kMb = 1000 * 1000;

struct Options {
  uint64_t seed = 1;
  double rate = 200;
  double minutes = 10;
  double budget_fraction = 0.2;
  bool drift = false;
  std::string json;
};

struct ModelInfo {
  std::string id;
  uint64_t bytes = 0;
  std::chrono::nanoseconds load_cost{};
};

struct Request {
  double t_s = 0;
  int model = 0;
};

std::vector<ModelInfo> MakeModels(std::mt19937_64& rng) {
  std::lognormal_distribution<double> size_mb(std::log(kMedianMb), kSizeSigma);
  std::vector<ModelInfo> models(kModels);
  for (int i = 0; i < kModels; ++i) {
    const double mb = std::clamp(size_mb(rng), kMinMb, kMaxMb);
    models[i].id = "m" + std::to_string(i);
    models[i].bytes = static_cast<uint64_t>(mb * kMb);
    models[i].load_cost =
        std::chrono::nanoseconds(static_cast<int64_t>((kLoadMsPerMb * mb + kLoadMsFixed) * 1e6));
  }
  return models;
}

std::vector<Request> MakeTrace(const Options& o, std::mt19937_64& rng) {
  std::vector<int> by_rank(kModels);  // popularity rank → model
  std::iota(by_rank.begin(), by_rank.end(), 0);
  std::shuffle(by_rank.begin(), by_rank.end(), rng);
  std::vector<double> weights(kModels);
  for (int k = 0; k < kModels; ++k) weights[k] = 1.0 / std::pow(k + 1, kZipfS);
  std::discrete_distribution<int> rank(weights.begin(), weights.end());
  std::exponential_distribution<double> gap(o.rate);

  std::vector<Request> trace;
  const double end_s = o.minutes * 60;
  for (double t = gap(rng); t < end_s; t += gap(rng)) {
    const int phase = o.drift ? static_cast<int>(t / kDriftPeriodS) : 0;
    trace.push_back({t, by_rank[(rank(rng) + phase * kDriftShift) % kModels]});
  }
  return trace;
}

struct Outcome {
  uint64_t requests = 0, hits = 0, warm_requests = 0, warm_hits = 0;
  uint64_t loads = 0, evictions = 0, rejected = 0, thrashing_loads = 0;
  double loaded_mb = 0, load_s = 0;
  double warm_misses() const { return static_cast<double>(warm_requests - warm_hits); }
};

Outcome Replay(EvictionPolicyKind kind, size_t max_models, uint64_t budget,
               const std::vector<ModelInfo>& models, const std::vector<Request>& trace) {
  worker::Residency residency(budget, worker::MakeEvictionPolicy(kind, max_models));
  const auto nothing_busy = [](std::string_view) { return false; };
  const SteadyClock::time_point t0{};
  Outcome out;
  int minute_shown = -1;
  for (const Request& req : trace) {
    const ModelInfo& m = models[req.model];
    const auto now = t0 + std::chrono::duration_cast<SteadyClock::duration>(
                              std::chrono::duration<double>(req.t_s));
    const bool warm = req.t_s >= kWarmupS;
    const bool hit = residency.Resident(m.id);
    ++out.requests;
    out.hits += hit;
    out.warm_requests += warm;
    out.warm_hits += warm && hit;
    if (!hit) {
      auto plan = residency.PlanAdmit(m.id, m.bytes, nothing_busy, now);
      if (!plan.ok()) {  // bigger than the whole budget: a very small --budget-fraction
        ++out.rejected;
        continue;
      }
      for (const std::string& victim : *plan) residency.Evicted(victim, now);
      residency.Loaded(m.id, m.bytes, /*pinned=*/false, m.load_cost, now);
      out.loaded_mb += static_cast<double>(m.bytes) / kMb;
      out.load_s += std::chrono::duration<double>(m.load_cost).count();
      out.thrashing_loads += residency.Thrashing(m.id, now);
    }
    residency.Used(m.id, now);
    if (const int minute = static_cast<int>(req.t_s / 60); minute != minute_shown) {
      minute_shown = minute;
      std::fprintf(stderr, "\r%-10s simulated minute %d",
                   std::string(worker::EvictionPolicyName(kind)).c_str(), minute + 1);
    }
  }
  std::fprintf(stderr, "\n");
  out.loads = residency.counters().loads;
  out.evictions = residency.counters().evictions;
  return out;
}

std::string Key(EvictionPolicyKind kind) {
  std::string key(worker::EvictionPolicyName(kind));
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

int Run(const Options& o) {
  std::mt19937_64 rng(o.seed);
  const std::vector<ModelInfo> models = MakeModels(rng);
  const std::vector<Request> trace = MakeTrace(o, rng);
  uint64_t total = 0, largest = 0;
  for (const auto& m : models) total += m.bytes, largest = std::max(largest, m.bytes);
  const auto budget = static_cast<uint64_t>(o.budget_fraction * static_cast<double>(total));
  const size_t max_models = std::max<uint64_t>(1, budget / (total / kModels));

  std::printf(
      "trace: seed %llu, %d models, %.0f MB total (mean %.0f MB, largest %.0f MB), "
      "%zu requests at %.0f/s over %.1f min%s\n",
      static_cast<unsigned long long>(o.seed), kModels, double(total) / kMb,
      double(total) / kMb / kModels, double(largest) / kMb, trace.size(), o.rate, o.minutes,
      o.drift ? ", popularity drifting every 30 s" : "");
  std::printf("budget: %.0f MB (%.0f%% of total); count policy max_models = %zu\n\n",
              double(budget) / kMb, 100 * o.budget_fraction, max_models);

  const EvictionPolicyKind kinds[] = {EvictionPolicyKind::kCostAware, EvictionPolicyKind::kLru,
                                      EvictionPolicyKind::kCount};
  std::map<EvictionPolicyKind, Outcome> outcomes;
  for (auto kind : kinds) outcomes[kind] = Replay(kind, max_models, budget, models, trace);

  const double minutes = o.minutes;
  const double warm_minutes = std::max(1e-9, minutes - kWarmupS / 60);
  const Outcome& base = outcomes[EvictionPolicyKind::kCostAware];
  std::map<std::string, double> figures = {{"seed", double(o.seed)},
                                           {"rate", o.rate},
                                           {"minutes", o.minutes},
                                           {"budget_fraction", o.budget_fraction},
                                           {"budget_mb", double(budget) / kMb},
                                           {"count_max_models", double(max_models)},
                                           {"drift", o.drift ? 1.0 : 0.0}};
  std::printf("%-10s %8s %8s %7s %9s %8s %9s %9s %9s %8s %9s\n", "policy", "hit", "warm-hit",
              "loads", "evictions", "loads/m", "MB/min", "load-s/m", "thrash-ld", "misses×",
              "rejected");
  for (auto kind : kinds) {
    const Outcome& r = outcomes[kind];
    const std::string k = Key(kind);
    const double hit = double(r.hits) / std::max<uint64_t>(1, r.requests);
    const double warm_hit = double(r.warm_hits) / std::max<uint64_t>(1, r.warm_requests);
    // Misses against cost-aware's, warm: > 1 means more misses than cost-aware.
    const double ratio = r.warm_misses() / std::max(1.0, base.warm_misses());
    std::printf("%-10s %7.2f%% %7.2f%% %7llu %9llu %8.1f %9.0f %9.1f %9llu %8.2f %9llu\n",
                std::string(worker::EvictionPolicyName(kind)).c_str(), 100 * hit, 100 * warm_hit,
                static_cast<unsigned long long>(r.loads),
                static_cast<unsigned long long>(r.evictions), r.loads / minutes,
                r.loaded_mb / minutes, r.load_s / minutes,
                static_cast<unsigned long long>(r.thrashing_loads), ratio,
                static_cast<unsigned long long>(r.rejected));
    figures[k + "_hit_rate"] = hit;
    figures[k + "_warm_hit_rate"] = warm_hit;
    figures[k + "_loads"] = double(r.loads);
    figures[k + "_evictions"] = double(r.evictions);
    figures[k + "_loads_per_min"] = r.loads / minutes;
    figures[k + "_mb_loaded_per_min"] = r.loaded_mb / minutes;
    figures[k + "_load_s_per_min"] = r.load_s / minutes;
    figures[k + "_thrashing_loads"] = double(r.thrashing_loads);
    figures[k + "_warm_misses_per_min"] = r.warm_misses() / warm_minutes;
    if (kind != EvictionPolicyKind::kCostAware)
      figures["misses_ratio_" + k + "_over_cost_aware"] = ratio;
  }
  std::printf(
      "\nmisses× = warm misses / cost-aware's warm misses; load-s/m = seconds spent "
      "loading per simulated minute;\nthrash-ld = loads of a model loaded %zu+ times "
      "within %llds.\n",
      worker::Residency::kThrashLoads,
      static_cast<long long>(worker::Residency::kThrashWindow.count()));
  if (!o.json.empty()) WriteFigures(o.json, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Replays one synthetic trace through the residency eviction policies"};
  app.add_option("--seed", o.seed, "trace seed");
  app.add_option("--rate", o.rate, "requests per simulated second")->check(CLI::PositiveNumber);
  app.add_option("--minutes", o.minutes, "simulated minutes")->check(CLI::PositiveNumber);
  app.add_option("--budget-fraction", o.budget_fraction,
                 "budget as a fraction of all models' bytes")
      ->check(CLI::Range(0.001, 1.0));
  app.add_flag("--drift", o.drift, "shift popularity every 30 simulated s");
  app.add_option("--json", o.json, "write the figures as one flat JSON object");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
