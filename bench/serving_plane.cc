// The serving-plane benchmark (issue: gateway → JetStream → pulling workers).
//
// With the identity runtime at zero cost, it measures what the queue path
// costs: the same gateway binary, once with the queue (`shoal gateway` +
// `shoal worker` over nats-server) and once calling the runtime in-process
// (`shoal gateway --in-process`), under the same load from this process.
//
//   1. maximum throughput, closed loop, 64 keep-alive connections;
//   2. latency at a quarter of the queue path's maximum (open loop);
//   3. latency at a tenth of it.
// Each measurement is repeated and the median kept (the machine is shared by
// the load generator, nats-server, gateway and worker). Prints a table and
// writes a flat JSON object of numbers (docs/bench/serving-plane.json).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>
#include <thread>

#include "common/subprocess.h"
#include "figures.h"
#include "loadtest/load_generator.h"
#include "process_cpu.h"
#include "queue/nats_server.h"

namespace shoal::bench {
using namespace loadtest;  // RunLoad, LoadSpec, MixEntry, Percentile
namespace {


LoadSpec Spec(int port, int connections, double rate, std::chrono::milliseconds duration) {
  LoadSpec s;
  s.port = port;
  s.path = "/v1/encode/bench/identity";
  s.content_type = "application/msgpack";
  s.body = OneItemBody("the quick brown fox jumps over the lazy dog");
  s.connections = connections;
  s.rate = rate;
  s.duration = duration;
  return s;
}

bool WaitServing(int port) {
  for (int i = 0; i < 200; ++i) {
    if (PortAcceptsConnections(port)) {
      LoadSpec probe = Spec(port, 1, 0, std::chrono::milliseconds(100));
      probe.warmup = std::chrono::milliseconds(0);
      if (RunLoad(probe).ok > 0) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// The processes whose CPU a measurement accounts for.
using Processes = std::vector<std::pair<std::string, pid_t>>;

struct Sample {
  double rps, p50, p99;
  std::string cpu;  // "gateway 31 µs/req, ..."
};

void Progress(const char* what, int i, int n, const Sample& s) {
  std::printf("  %-12s run %d/%d: %8.0f req/s  p50 %7.3f ms  p99 %7.3f ms  CPU/request: %s\n", what,
              i + 1, n, s.rps, s.p50, s.p99, s.cpu.c_str());
  std::fflush(stdout);
}

void Report(std::map<std::string, std::vector<double>>& m, double max_rps, int queue_port,
            const Processes& queue_procs, int direct_port, const Processes& direct_procs,
            int connections, int repeats, std::chrono::seconds duration, const std::string& out_path);

Sample Measure(int port, const Processes& procs, int connections, double rate,
               std::chrono::milliseconds duration) {
  std::vector<double> before;
  for (const auto& [name, pid] : procs) before.push_back(CpuSeconds(pid));
  LoadResult r = RunLoad(Spec(port, connections, rate, duration));
  if (r.errors > 0) std::fprintf(stderr, "  (%llu errors)\n", static_cast<unsigned long long>(r.errors));
  // Warm-up requests used CPU too: count them (at the measured rate).
  const double requests = r.requests_per_s * std::chrono::duration<double>(duration + LoadSpec{}.warmup).count();
  std::string cpu;
  double total = 0;
  for (size_t i = 0; i < procs.size(); ++i) {
    const double us = (CpuSeconds(procs[i].second) - before[i]) * 1e6 / std::max(requests, 1.0);
    total += us;
    char part[64];
    std::snprintf(part, sizeof(part), "%s%s %.0f", cpu.empty() ? "" : ", ", procs[i].first.c_str(), us);
    cpu += part;
  }
  if (procs.size() > 1) {
    char part[32];
    std::snprintf(part, sizeof(part), " (total %.0f) us", total);
    cpu += part;
  } else {
    cpu += " us";
  }
  return {r.requests_per_s, r.Percentile(50), r.Percentile(99), cpu};
}

int Run(const std::string& shoal, const std::string& out_path, int repeats, int duration_s, int connections,
        bool max_only, bool keep_dir, double profile_rate) {
  char tmpl[] = "/tmp/shoal-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::filesystem::create_directories(dir + "/models");
  std::ofstream(dir + "/models/bench.yaml")
      << "id: bench/identity\nruntime: identity\n"
         "description: \"zero-cost identity model for the serving-plane benchmark\"\n"
         "pinned: true\n"
         "batching: {max_batch_tokens: 16384, max_batch_requests: 64, max_batch_wait_ms: 0}\n"
         "identity: {dim: 384, us_per_token: 0, us_per_batch: 0}\n";

  std::printf("serving-plane benchmark: identity runtime at zero cost, %d connections, %d s per run, "
              "median of %d\n", connections, duration_s, repeats);
  auto nats = queue::NatsServer::Start({.data_dir = dir + "/nats"});
  if (!nats.ok()) {
    std::fprintf(stderr, "%s\n", nats.status().ToString().c_str());
    return 1;
  }
  const std::string url = (*nats)->url();
  {
    auto add = Subprocess::Spawn({shoal, "models", "--nats", url, "add", dir + "/models/bench.yaml"}, dir + "/admin.log");
    if (!add.ok() || add->Stop(0, std::chrono::seconds(20)) != 0) {
      std::fprintf(stderr, "registering the model failed (see %s/admin.log)\n", dir.c_str());
      return 1;
    }
  }
  auto queue_port = FreeLoopbackPort();
  auto direct_port = FreeLoopbackPort();
  auto worker = Subprocess::Spawn({shoal, "--log-level", "warn", "worker", "--nats", url}, dir + "/worker.log");
  auto queue_gw = Subprocess::Spawn({shoal, "--log-level", "warn", "gateway", "--nats", url, "--port",
                                     std::to_string(*queue_port), "--io-threads", "2"},
                                    dir + "/gateway.log");
  auto direct_gw = Subprocess::Spawn({shoal, "--log-level", "warn", "gateway", "--in-process", "--models-dir",
                                      dir + "/models", "--port", std::to_string(*direct_port), "--io-threads", "2"},
                                     dir + "/direct.log");
  if (!worker.ok() || !queue_gw.ok() || !direct_gw.ok() || !WaitServing(*queue_port) ||
      !WaitServing(*direct_port)) {
    std::fprintf(stderr, "the cluster did not start (logs in %s)\n", dir.c_str());
    return 1;
  }
  const auto duration = std::chrono::seconds(duration_s);
  const Processes queue_procs = {
      {"gateway", queue_gw->pid()}, {"worker", worker->pid()}, {"nats-server", (*nats)->pid()}};
  const Processes direct_procs = {{"gateway", direct_gw->pid()}};

  std::map<std::string, std::vector<double>> m;
  if (profile_rate > 0) {  // one open-loop run of the queue path, e.g. under perf
    for (int i = 0; i < repeats; ++i) {
      Progress("queue path", i, repeats, Measure(*queue_port, queue_procs, connections, profile_rate, duration));
    }
    max_only = true;
  }
  std::printf("\n[1/3] maximum throughput (closed loop)\n");
  for (int i = 0; i < repeats; ++i) {
    Sample q = Measure(*queue_port, queue_procs, connections, 0, duration);
    Progress("queue path", i, repeats, q);
    Sample d = Measure(*direct_port, direct_procs, connections, 0, duration);
    Progress("in-process", i, repeats, d);
    m["queue_max"].push_back(q.rps);
    m["direct_max"].push_back(d.rps);
  }
  const double max_rps = Median(m["queue_max"]);
  if (!max_only) {
    Report(m, max_rps, *queue_port, queue_procs, *direct_port, direct_procs, connections, repeats,
           duration, out_path);
  }
  direct_gw->Stop(SIGTERM, std::chrono::seconds(10));
  queue_gw->Stop(SIGTERM, std::chrono::seconds(10));
  worker->Stop(SIGTERM, std::chrono::seconds(10));
  (*nats)->Stop();
  if (keep_dir) std::printf("logs kept in %s\n", dir.c_str());
  else std::filesystem::remove_all(dir);
  return 0;
}

// Phases 2 and 3 at fractions of `max_rps`, then the summary and the JSON.
void Report(std::map<std::string, std::vector<double>>& m, double max_rps, int queue_port,
            const Processes& queue_procs, int direct_port, const Processes& direct_procs,
            int connections, int repeats, std::chrono::seconds duration, const std::string& out_path) {
  const double quarter = max_rps / 4, tenth = max_rps / 10;
  for (auto [label, rate, key] : {std::tuple{"[2/3] a quarter of the maximum", quarter, "quarter"},
                                  std::tuple{"[3/3] a tenth of the maximum", tenth, "tenth"}}) {
    std::printf("\n%s: %.0f req/s (open loop)\n", label, rate);
    for (int i = 0; i < repeats; ++i) {
      Sample q = Measure(queue_port, queue_procs, connections, rate, duration);
      Progress("queue path", i, repeats, q);
      Sample d = Measure(direct_port, direct_procs, connections, rate, duration);
      Progress("in-process", i, repeats, d);
      m[std::string("queue_p50_") + key].push_back(q.p50);
      m[std::string("queue_p99_") + key].push_back(q.p99);
      m[std::string("direct_p50_") + key].push_back(d.p50);
      m[std::string("direct_p99_") + key].push_back(d.p99);
    }
  }

  std::map<std::string, double> r;
  r["req_per_s"] = max_rps;
  r["inprocess_req_per_s"] = Median(m["direct_max"]);
  r["throughput_ratio"] = max_rps / r["inprocess_req_per_s"];
  r["connections"] = connections;
  r["rate_quarter"] = quarter;
  r["rate_tenth"] = tenth;
  for (const char* key : {"quarter", "tenth"}) {
    for (const char* pct : {"p50", "p99"}) {
      const double q = Median(m[std::string("queue_") + pct + "_" + key]);
      const double d = Median(m[std::string("direct_") + pct + "_" + key]);
      r[std::string("queue_") + pct + "_ms_" + key] = q;
      r[std::string("inprocess_") + pct + "_ms_" + key] = d;
      r[std::string(pct) + "_ratio_" + key] = q / d;
    }
  }
  r["queue_p50_added_ms"] = r["queue_p50_ms_quarter"] - r["inprocess_p50_ms_quarter"];
  r["queue_p99_added_ms"] = r["queue_p99_ms_tenth"] - r["inprocess_p99_ms_tenth"];

  std::printf("\nresult (medians)\n");
  std::printf("  throughput, 64 connections   queue %8.0f req/s   in-process %8.0f req/s   ratio %.2f\n",
              r["req_per_s"], r["inprocess_req_per_s"], r["throughput_ratio"]);
  std::printf("  p50 at 1/4 load              queue %8.3f ms      in-process %8.3f ms      added %.3f ms (ratio %.2f)\n",
              r["queue_p50_ms_quarter"], r["inprocess_p50_ms_quarter"], r["queue_p50_added_ms"], r["p50_ratio_quarter"]);
  std::printf("  p99 at 1/10 load             queue %8.3f ms      in-process %8.3f ms      added %.3f ms (ratio %.2f)\n",
              r["queue_p99_ms_tenth"], r["inprocess_p99_ms_tenth"], r["queue_p99_added_ms"], r["p99_ratio_tenth"]);
  std::printf("  p99 at 1/4 load (contention) queue %8.3f ms      in-process %8.3f ms\n",
              r["queue_p99_ms_quarter"], r["inprocess_p99_ms_quarter"]);
  std::printf("  p50 at 1/10 load             queue %8.3f ms      in-process %8.3f ms\n",
              r["queue_p50_ms_tenth"], r["inprocess_p50_ms_tenth"]);

  if (!out_path.empty()) WriteFigures(out_path, r);
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  CLI::App app{"Shoal serving-plane benchmark: queue path vs in-process, identity runtime"};
  std::string shoal = SHOAL_BINARY, out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/serving-plane.json";
  int repeats = 3, duration_s = 5, connections = 64;
  bool max_only = false, keep_dir = false;
  double profile_rate = 0;
  app.add_option("--shoal", shoal, "the shoal binary")->capture_default_str();
  app.add_option("--out", out, "JSON results (empty: none)")->capture_default_str();
  app.add_option("--repeats", repeats, "runs per measurement (median kept)")->capture_default_str();
  app.add_option("--duration-s", duration_s, "seconds per run")->capture_default_str();
  app.add_option("--connections", connections, "keep-alive connections")->capture_default_str();
  app.add_flag("--max-only", max_only, "only the throughput phase, nothing written");
  app.add_flag("--keep-dir", keep_dir, "keep the temporary directory (process logs)");
  app.add_option("--profile-rate", profile_rate, "first run the queue path open-loop at this rate");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(shoal, out, repeats, duration_s, connections, max_only, keep_dir, profile_rate);
}
