// The fleet benchmark (issue 4): workers that pull from the shared queue and
// batch for themselves, against a router that pushes each request to one
// worker (round-robin or least-outstanding, as the vLLM and SGLang routers
// do), on the same workers, models and request mix, in one run.
//
// Fleet: 8 models on the identity runtime with a device-like cost — a fixed
// time per batch (15 ms) plus a time per token (20 µs), slept, not spun, as a
// GPU leaves the CPU free — so batching pays as it does on a device; the
// times are scaled so that the devices, not this 2-core machine's serving
// plane, are what saturates. Popularity is skewed (Zipf s = 1.1 over the 8
// models); 70 % of requests are short queries (~12 words), 30 % passages
// (~150 words). 3 worker processes with one executor each stand in for 3
// devices. Every model has the adaptive batch wait (target 40 ms, wait 0–20 ms).
//
// For each mode the offered load (open loop) rises by 1.3× a step until the
// mode has fallen behind (under 95 % of offered, or p99 over a second) twice.
// The knee is the last step before the first whose p99 missed the latency
// objective (--slo-ms, 250 ms); the one-second knee is reported beside it;
// each is then narrowed down to ~7 % by two halvings.
// Then, at 80 % of each knee: p50, p99 and mean batch fill (items per batch
// over max_batch_requests, from the workers' heartbeat counters). Last,
// adaptive against fixed (2 ms) batch wait, pull and push-lo, at 80 % of
// the pull knee.
//
// Prints the sweep as it goes and a summary; writes docs/bench/pull-vs-push.json.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "common/subprocess.h"
#include "figures.h"
#include "loadtest/load_generator.h"
#include "queue/control_plane.h"
#include "queue/nats_server.h"
#include "queue/worker_registry.h"

namespace shoal::bench {
using namespace loadtest;  // RunLoad, LoadSpec, MixEntry, Percentile
namespace {

struct Options {
  std::string shoal = SHOAL_BINARY;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/pull-vs-push.json";
  int workers = 3;
  int models = 8;
  int step_seconds = 3;
  int us_per_batch = 15000;
  int us_per_token = 20;
  double slo_ms = 250;
  int max_batch_requests = 32;
  int connections = 512;
  double start_rate = 200;
  bool keep_dir = false;
  std::string only;  // sweep this mode alone
};

constexpr double kStep = 1.3;

std::string Words(std::mt19937& rng, int n) {
  static const char* kWords[] = {"river", "mill", "town", "bridge", "fish", "water", "spring", "summer",
                                 "school", "shadow", "queue", "worker", "message", "kitchen", "ticket",
                                 "order", "cook", "machine", "network", "request", "model", "batch"};
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += kWords[rng() % std::size(kWords)];
  }
  return s;
}

// OpenAI embeddings requests over the fleet: skewed models, short and long texts.
std::vector<MixEntry> FleetMix(const std::string& prefix, int models) {
  std::mt19937 rng(11);
  std::vector<MixEntry> mix;
  for (int m = 0; m < models; ++m) {
    const double popularity = 1.0 / std::pow(m + 1, 1.1);
    for (auto [words, share] : {std::pair{12, 0.7}, std::pair{150, 0.3}}) {
      MixEntry e;
      e.path = "/v1/embeddings";
      e.content_type = "application/json";
      e.body = "{\"model\":\"" + prefix + std::to_string(m) + "\",\"input\":\"" + Words(rng, words) + "\"}";
      e.weight = popularity * share;
      mix.push_back(std::move(e));
    }
  }
  return mix;
}

struct Point {
  double offered = 0, achieved = 0, p50 = NAN, p99 = NAN, fill = NAN;
  double p99_hot = NAN, p99_cold = NAN;  // the most popular model; the 4 least
  uint64_t errors = 0;
  // Kept up with the offered load, with p99 within `p99_bound_ms`.
  bool kept_up(double p99_bound_ms) const {
    return achieved >= 0.95 * offered && p99 <= p99_bound_ms && errors == 0;
  }
};

// A sweep's knees: the last step before the first that missed the latency
// objective, and the last before the first that missed one second.
struct Knees {
  Point slo, second;
};

// Cumulative batches and items over all live workers (heartbeat counters).
std::pair<uint64_t, uint64_t> BatchCounters(queue::WorkerRegistry& registry) {
  uint64_t batches = 0, items = 0;
  for (const auto& w : registry.Live()) {
    batches += w.batches;
    items += w.batch_items;
  }
  return {batches, items};
}

Point Measure(int port, const std::vector<MixEntry>& mix, double rate, const Options& o,
              queue::WorkerRegistry& registry) {
  LoadSpec spec;
  spec.port = port;
  spec.mix = mix;
  spec.rate = rate;
  spec.connections = o.connections;
  spec.duration = std::chrono::seconds(o.step_seconds);
  // Heartbeats come every second: let the counters settle around the run.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const auto before = BatchCounters(registry);
  LoadResult r = RunLoad(spec);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const auto after = BatchCounters(registry);
  Point p;
  p.offered = rate;
  p.achieved = r.requests_per_s;
  p.p50 = r.Percentile(50);
  p.p99 = r.Percentile(99);
  // FleetMix has two entries per model, in popularity order.
  LoadResult hot, cold;
  for (size_t i = 0; i < r.latencies_ms.size(); ++i) {
    const uint32_t model = r.entries[i] / 2;
    if (model == 0) hot.latencies_ms.push_back(r.latencies_ms[i]);
    if (model >= static_cast<uint32_t>(o.models) - 4) cold.latencies_ms.push_back(r.latencies_ms[i]);
  }
  p.p99_hot = hot.Percentile(99);
  p.p99_cold = cold.Percentile(99);
  p.errors = r.errors;
  const uint64_t batches = after.first - before.first, items = after.second - before.second;
  if (batches > 0) p.fill = static_cast<double>(items) / batches / o.max_batch_requests;
  return p;
}

void Print(const char* mode, const Point& p, const Options& o) {
  const char* verdict = p.kept_up(o.slo_ms) ? "" : p.kept_up(1000) ? "  (over the objective)" : "  (fell behind)";
  std::printf("  %-16s offered %6.0f  achieved %6.0f req/s  p50 %7.1f ms  p99 %7.1f ms (hot %7.1f, cold %7.1f)  "
              "batch fill %5.1f %%%s\n",
              mode, p.offered, p.achieved, p.p50, p.p99, p.p99_hot, p.p99_cold, p.fill * 100, verdict);
  std::fflush(stdout);
}

// Raises the offered load until the mode has missed one second twice in a
// row, then narrows each knee down between the last step that kept up and
// the first that did not (two halvings, in log scale: steps of ~7 %).
Knees FindKnees(const char* mode, int port, const std::vector<MixEntry>& mix, const Options& o,
                queue::WorkerRegistry& registry) {
  std::printf("\n%s: sweeping offered load\n", mode);
  Knees knees;
  double slo_miss = 0, second_miss = 0;  // the first offered load that missed
  int behind = 0;
  for (double rate = o.start_rate; behind < 2 && rate < 1e6; rate *= kStep) {
    Point p = Measure(port, mix, rate, o, registry);
    Print(mode, p, o);
    if (slo_miss == 0 && !p.kept_up(o.slo_ms)) slo_miss = rate;
    if (slo_miss == 0) knees.slo = p;
    if (p.kept_up(1000)) {
      if (second_miss == 0) knees.second = p;
      behind = 0;
    } else {
      if (second_miss == 0) second_miss = rate;
      ++behind;
    }
  }
  auto narrow = [&](Point& knee, double miss, double bound_ms) {
    if (knee.offered <= 0 || miss <= 0) return;
    for (int i = 0; i < 2; ++i) {
      const double mid = std::sqrt(knee.offered * miss);
      Point p = Measure(port, mix, mid, o, registry);
      Print(mode, p, o);
      if (p.kept_up(bound_ms)) knee = p;
      else miss = mid;
    }
  };
  std::printf("  narrowing the knees\n");
  narrow(knees.slo, slo_miss, o.slo_ms);
  narrow(knees.second, second_miss, 1000);
  return knees;
}

std::string Profile(const std::string& id, const Options& o, bool adaptive) {
  return "id: " + id + "\nruntime: identity\ndescription: \"fleet benchmark model (identity, device-like cost)\"\n" +
         "max_input_tokens: 1024\npinned: true\nbatching: {max_batch_tokens: 16384, max_batch_requests: " +
         std::to_string(o.max_batch_requests) + ", max_batch_wait_ms: 2" +
         (adaptive ? ", adaptive: {target_ms: 40, min_wait_ms: 0, max_wait_ms: 20}" : "") + "}\n" +
         "queue: {ack_wait_ms: 30000, max_deliver: 5}\n" + "identity: {dim: 384, us_per_token: " +
         std::to_string(o.us_per_token) + ", us_per_batch: " + std::to_string(o.us_per_batch) + "}\n";
}

int Run(const Options& o) {
  char tmpl[] = "/tmp/shoal-fleet-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::printf("fleet benchmark: %d identity models (%d µs per batch + %d µs per token), %d workers, "
              "%d s per step\n", o.models, o.us_per_batch, o.us_per_token, o.workers, o.step_seconds);
  auto nats = queue::NatsServer::Start({.data_dir = dir + "/nats"});
  if (!nats.ok()) {
    std::fprintf(stderr, "%s\n", nats.status().ToString().c_str());
    return 1;
  }
  const std::string url = (*nats)->url();
  std::filesystem::create_directories(dir + "/models");
  for (int m = 0; m < o.models; ++m) {
    std::ofstream(dir + "/models/fixed-" + std::to_string(m) + ".yaml") << Profile("fixed/m" + std::to_string(m), o, false);
    std::ofstream(dir + "/models/adaptive-" + std::to_string(m) + ".yaml")
        << Profile("adaptive/m" + std::to_string(m), o, true);
  }
  for (const auto& e : std::filesystem::directory_iterator(dir + "/models")) {
    auto add = Subprocess::Spawn({o.shoal, "models", "--nats", url, "add", e.path().string()}, dir + "/admin.log");
    if (!add.ok() || add->Stop(0, std::chrono::seconds(20)) != 0) {
      std::fprintf(stderr, "registering %s failed (see %s/admin.log)\n", e.path().c_str(), dir.c_str());
      return 1;
    }
  }
  std::vector<Subprocess> workers;
  for (int w = 0; w < o.workers; ++w) {
    auto p = Subprocess::Spawn({o.shoal, "--log-level", "warn", "worker", "--nats", url, "--executors", "1",
                                "--accept-push"},
                               dir + "/worker-" + std::to_string(w) + ".log");
    if (!p.ok()) return 1;
    workers.push_back(std::move(p).value());
  }
  auto free_port = [] {
    auto p = FreeLoopbackPort();
    return p.ok() ? *p : 0;
  };
  const int pull_port = free_port(), push_port = free_port(), rr_port = free_port();
  auto gateway = [&](int port, const char* dispatch) {
    return Subprocess::Spawn({o.shoal, "--log-level", "warn", "gateway", "--nats", url, "--port",
                              std::to_string(port), "--io-threads", "1", "--dispatch", dispatch},
                             dir + "/gateway-" + dispatch + ".log");
  };
  auto pull_gw = gateway(pull_port, "pull");
  auto push_gw = gateway(push_port, "push-lo");
  auto rr_gw = gateway(rr_port, "push-rr");
  if (!pull_gw.ok() || !push_gw.ok() || !rr_gw.ok() || !WaitAccepting(pull_port) || !WaitAccepting(push_port) ||
      !WaitAccepting(rr_port)) {
    std::fprintf(stderr, "the cluster did not start (logs in %s)\n", dir.c_str());
    return 1;
  }
  auto control = queue::ControlPlane::Connect(url, "fleet-bench");
  if (!control.ok()) return 1;
  auto registry = queue::WorkerRegistry::Open(control->workers.get(), std::chrono::seconds(4));
  if (!registry.ok()) return 1;
  std::this_thread::sleep_for(std::chrono::seconds(3));  // heartbeats, pull requests, push views

  const auto fixed = FleetMix("fixed/m", o.models), adaptive = FleetMix("adaptive/m", o.models);
  if (!o.only.empty()) {  // for tuning: one mode's sweep and nothing else
    const int port = o.only == "pull" ? pull_port : o.only == "push-lo" ? push_port : rr_port;
    const Knees k = FindKnees(o.only.c_str(), port, adaptive, o, **registry);
    std::printf("\n%s knee (p99 within %.0f ms): %.0f req/s\n", o.only.c_str(), o.slo_ms, k.slo.achieved);
    return 0;
  }
  const Knees pull_knees = FindKnees("pull", pull_port, adaptive, o, **registry);
  const Knees push_knees = FindKnees("push-lo", push_port, adaptive, o, **registry);
  const Knees rr_knees = FindKnees("push-rr", rr_port, adaptive, o, **registry);
  const Point &pull_knee = pull_knees.slo, &push_knee = push_knees.slo, &rr_knee = rr_knees.slo;

  std::printf("\nat 80 %% of each knee\n");
  const Point pull80 = Measure(pull_port, adaptive, 0.8 * pull_knee.offered, o, **registry);
  Print("pull", pull80, o);
  const Point push80 = Measure(push_port, adaptive, 0.8 * push_knee.offered, o, **registry);
  Print("push-lo", push80, o);
  const Point rr80 = Measure(rr_port, adaptive, 0.8 * rr_knee.offered, o, **registry);
  Print("push-rr", rr80, o);
  std::printf("\nadaptive against fixed batch wait at 80 %% of the pull knee\n");
  const Point fixed80 = Measure(pull_port, fixed, 0.8 * pull_knee.offered, o, **registry);
  Print("pull fixed", fixed80, o);
  const Point adaptive80 = Measure(pull_port, adaptive, 0.8 * pull_knee.offered, o, **registry);
  Print("pull adaptive", adaptive80, o);
  const Point push_fixed80 = Measure(push_port, fixed, 0.8 * pull_knee.offered, o, **registry);
  Print("push-lo fixed", push_fixed80, o);
  const Point push_adaptive80 = Measure(push_port, adaptive, 0.8 * pull_knee.offered, o, **registry);
  Print("push-lo adaptive", push_adaptive80, o);

  std::map<std::string, double> r;
  r["knee_pull_rps"] = pull_knee.achieved;
  r["knee_push_rps"] = push_knee.achieved;
  r["knee_push_rr_rps"] = rr_knee.achieved;
  r["knee_ratio_pull_over_push"] = pull_knee.achieved / push_knee.achieved;
  r["knee_ratio_pull_over_push_rr"] = pull_knee.achieved / rr_knee.achieved;
  r["slo_p99_ms"] = o.slo_ms;
  r["knee_1s_pull_rps"] = pull_knees.second.achieved;
  r["knee_1s_push_rps"] = push_knees.second.achieved;
  r["knee_1s_push_rr_rps"] = rr_knees.second.achieved;
  for (auto [name, p] : {std::pair{"pull", &pull80}, std::pair{"push", &push80}, std::pair{"push_rr", &rr80}}) {
    r[std::string(name) + "_p50_ms_at_80pct"] = p->p50;
    r[std::string(name) + "_p99_ms_at_80pct"] = p->p99;
    r[std::string(name) + "_batch_fill_at_80pct"] = p->fill;
  }
  r["fixed_p50_ms"] = fixed80.p50;
  r["fixed_p99_ms"] = fixed80.p99;
  r["adaptive_p50_ms"] = adaptive80.p50;
  r["adaptive_p99_ms"] = adaptive80.p99;
  r["fixed_batch_fill"] = fixed80.fill;
  r["adaptive_batch_fill"] = adaptive80.fill;
  // Above 1: adaptive waits gave the lower p99 at the same offered load.
  r["adaptive_over_fixed"] = fixed80.p99 / adaptive80.p99;
  r["push_fixed_p99_ms"] = push_fixed80.p99;
  r["push_adaptive_p99_ms"] = push_adaptive80.p99;
  r["push_adaptive_over_fixed"] = push_fixed80.p99 / push_adaptive80.p99;

  std::printf("\nresult (the knee: p99 within %.0f ms)\n", o.slo_ms);
  std::printf("  knee: pull %.0f req/s, push-lo %.0f, push-rr %.0f  →  pull / push-lo %.2f×, pull / push-rr %.2f×\n",
              r["knee_pull_rps"], r["knee_push_rps"], r["knee_push_rr_rps"], r["knee_ratio_pull_over_push"],
              r["knee_ratio_pull_over_push_rr"]);
  std::printf("  adaptive over fixed (p99 fixed / p99 adaptive at the same load): %.2f\n", r["adaptive_over_fixed"]);
  if (!o.out.empty()) WriteFigures(o.out, r);
  for (auto* gw : {&*pull_gw, &*push_gw, &*rr_gw}) gw->Stop(SIGTERM, std::chrono::seconds(10));
  for (auto& w : workers) w.Stop(SIGTERM, std::chrono::seconds(10));
  registry->reset();
  (*nats)->Stop();
  if (o.keep_dir) std::printf("logs kept in %s\n", dir.c_str());
  else std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Fleet benchmark: pulling workers against a pushing router"};
  app.add_option("--shoal", o.shoal, "the shoal binary")->capture_default_str();
  app.add_option("--out", o.out, "JSON results (empty: none)")->capture_default_str();
  app.add_option("--workers", o.workers, "worker processes")->capture_default_str();
  app.add_option("--models", o.models, "models in the fleet")->capture_default_str();
  app.add_option("--step-seconds", o.step_seconds, "seconds per load step")->capture_default_str();
  app.add_option("--us-per-batch", o.us_per_batch, "simulated device time per batch")->capture_default_str();
  app.add_option("--us-per-token", o.us_per_token, "simulated device time per token")->capture_default_str();
  app.add_option("--slo-ms", o.slo_ms, "the p99 objective that bounds the knee")->capture_default_str();
  app.add_option("--start-rate", o.start_rate, "first offered load, req/s")->capture_default_str();
  app.add_option("--connections", o.connections, "keep-alive connections")->capture_default_str();
  app.add_option("--only", o.only, "sweep this mode alone and write nothing")
      ->check(CLI::IsMember({"pull", "push-lo", "push-rr"}));
  app.add_flag("--keep-dir", o.keep_dir, "keep the temporary directory (process logs)");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
