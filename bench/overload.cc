// The overload benchmark (issue 7): admission control under twice the load
// the cluster can serve.
//
// Cluster: nats-server, one `shoal worker` (one executor) and one `shoal
// gateway` as processes, serving one identity model whose cost is a fixed
// time per batch, slept, not spun (as a device leaves the CPU free): with
// --us-per-batch 40000 and --max-batch-requests 16 the worker can finish at
// most 400 requests/s, far under what the gateway can pass (~16,000 req/s
// on this machine, docs/benchmarks.md), so the worker is the bottleneck and
// the two cores stay free for the gateway, nats-server and the load.
//
// Admission limits, as an operator would set them for this model:
//   --max-queued-per-model 64   the model's backlog in its work stream
//       (waiting or running): 4 batches — enough that the executor never
//       waits for work (a batch is always formed while one runs), few
//       enough that an accepted request waits at most ~64 / 400 s = 160 ms.
//       This is the bound that bites: it holds for the whole cluster.
//   --max-in-flight 256         per gateway: above what the model's bound
//       lets in (64 accepted, the rest answered at once), so it only guards
//       the gateway's memory should answers stall (a safety net, not the
//       working limit).
//
//   1. The knee: closed loop, concurrency 4, 8, 16, ... while goodput
//      still rises (by 3 % or more within two steps); the knee throughput is
//      the best goodput seen.
//   2. Overload: open loop at 2× the knee for --seconds (latency counted
//      from when each request was due), on enough connections that the
//      client never holds requests back. Every second: goodput, rejections,
//      and the VmRSS of gateway, worker and nats-server.
//   3. Figures: goodput (correct 200s — the body checked byte for byte
//      against the identity model's known answer — that arrived within the
//      measured window, per second) and goodput / knee; p50
//      and p99 of rejected (503, 429) and accepted requests; counts per
//      status; RSS at start, peak and end, and whether it stayed bounded
//      (the second half's peak within 5 % or 4 MiB of the first half's).
//
// Writes goodput_fraction_at_2x_knee and reject_p99_ms (and a few overload_*
// figures) into docs/bench/overload-chaos.json, which it shares with the
// chaos and fuzz tools (MergeFigures keeps their keys).
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/subprocess.h"
#include "figures.h"
#include "loadtest/load_generator.h"
#include "queue/nats_server.h"
#include "runtime/identity/identity_runtime.h"
#include "support/http_client.h"
#include "wire/msgpack_writer.h"

namespace shoal::bench {
using namespace loadtest;  // RunLoad, LoadSpec, MixEntry, Percentile
namespace {

constexpr char kModel[] = "bench/overload";
constexpr char kText[] = "the quick brown fox jumps over the lazy dog";
constexpr uint32_t kDim = 384;

struct Options {
  std::string shoal = SHOAL_BINARY;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/overload-chaos.json";
  int seconds = 60;
  int step_seconds = 3;
  int us_per_batch = 40000;
  int max_batch_requests = 16;
  int max_in_flight = 256;
  int max_queued = 64;
  int connections = 1024;
  int io_threads = 2;
  double knee = 0;  // given: skip the sweep
  bool keep_dir = false;
};


LoadSpec Spec(int port, int connections, double rate, std::chrono::milliseconds duration) {
  LoadSpec s;
  s.port = port;
  s.path = std::string("/v1/encode/") + kModel;
  s.content_type = "application/msgpack";
  s.body = OneItemBody(kText);
  s.connections = connections;
  s.rate = rate;
  s.duration = duration;
  return s;
}

// The model's answer to OneItemBody(kText), once it serves, checked against the
// identity vector computed here; "" when it never answered right.
std::string ReferenceAnswer(int port) {
  std::string vector;
  wire::MsgpackWriter(&vector).Float32Array(IdentityVector(IdentityTokens(kText), kDim, true).data(), kDim);
  for (int i = 0; i < 300; ++i) {
    testing::HttpClient http(port, 2000);
    auto r = http.PostMsgpack(std::string("/v1/encode/") + kModel, OneItemBody(kText));
    if (r.ok() && r->status == 200) {
      if (r->body.find(vector) != std::string::npos) return r->body;
      std::fprintf(stderr, "the model answered, but not the identity vector\n");
      return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

// VmRSS of a process in MiB (NaN once it is gone).
double RssMib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return NAN;
}

struct Process {
  std::string name;
  pid_t pid;
};

// One process's RSS over the overload run, a sample a second.
struct RssTrace {
  double start = NAN;  // before the load
  std::vector<double> samples;

  double Peak(size_t from, size_t to) const {
    double peak = 0;
    for (size_t i = from; i < std::min(to, samples.size()); ++i) peak = std::max(peak, samples[i]);
    return peak;
  }
  double first_half_peak() const { return Peak(0, samples.size() / 2); }
  double second_half_peak() const { return Peak(samples.size() / 2, samples.size()); }
  double end() const { return samples.empty() ? NAN : samples.back(); }
  // The second half's peak is not above the first half's by more than 5 %
  // or 4 MiB (allocator noise), whichever is larger: it levelled off.
  bool bounded() const {
    const double first = first_half_peak();
    return second_half_peak() <= first + std::max(0.05 * first, 4.0);
  }
};

bool IsRejection(int status) { return status == 503 || status == 429; }

// Closed loop at rising concurrency; the best goodput.
double FindKnee(int port, const Options& o, const std::string& expect) {
  std::printf("\n[1/2] the knee: closed loop, %d s per step\n", o.step_seconds);
  double best = 0;
  int best_c = 0, flat = 0;
  for (int c = 4; c <= o.max_in_flight && flat < 2; c *= 2) {
    LoadSpec spec = Spec(port, c, 0, std::chrono::seconds(o.step_seconds));
    spec.expect_body = expect;
    const LoadResult r = RunLoad(spec);
    const double goodput = static_cast<double>(r.ok_in_window) / o.step_seconds;
    std::printf("  concurrency %4d: goodput %7.0f req/s  p50 %7.1f ms  p99 %7.1f ms  not ok %llu\n", c, goodput,
                r.Percentile(50), r.Percentile(99), static_cast<unsigned long long>(r.errors));
    std::fflush(stdout);
    flat = goodput >= 1.03 * best ? 0 : flat + 1;
    if (goodput > best) {
      best = goodput;
      best_c = c;
    }
  }
  std::printf("  knee: %.0f req/s (best goodput, at concurrency %d)\n", best, best_c);
  return best;
}

int Run(const Options& o) {
  char tmpl[] = "/tmp/shoal-overload-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::filesystem::create_directories(dir + "/models");
  std::ofstream(dir + "/models/overload.yaml")
      << "id: " << kModel << "\nruntime: identity\n"
      << "description: \"overload benchmark model (identity, a fixed device-like cost per batch)\"\n"
      << "pinned: true\n"
      << "batching: {max_batch_tokens: 16384, max_batch_requests: " << o.max_batch_requests
      << ", max_batch_wait_ms: 2}\n"
      << "queue: {ack_wait_ms: 30000, max_deliver: 5}\n"
      << "identity: {dim: " << kDim << ", us_per_batch: " << o.us_per_batch << "}\n";
  std::printf("overload benchmark: identity model, %d µs per batch of up to %d (at most %.0f req/s), "
              "gateway --max-in-flight %d --max-queued-per-model %d\n",
              o.us_per_batch, o.max_batch_requests, 1e6 * o.max_batch_requests / o.us_per_batch, o.max_in_flight,
              o.max_queued);
  queue::NatsServerOptions nats_options;
  nats_options.data_dir = dir + "/nats";
  auto nats = queue::NatsServer::Start(nats_options);
  if (!nats.ok()) {
    std::fprintf(stderr, "%s\n", nats.status().ToString().c_str());
    return 1;
  }
  const std::string url = (*nats)->url();
  {
    auto add = Subprocess::Spawn({o.shoal, "models", "--nats", url, "add", dir + "/models/overload.yaml"},
                                 dir + "/admin.log");
    if (!add.ok() || add->Stop(0, std::chrono::seconds(20)) != 0) {
      std::fprintf(stderr, "registering the model failed (see %s/admin.log)\n", dir.c_str());
      return 1;
    }
  }
  auto port = FreeLoopbackPort();
  if (!port.ok()) return 1;
  auto worker = Subprocess::Spawn({o.shoal, "--log-level", "warn", "worker", "--nats", url, "--executors", "1"},
                                  dir + "/worker.log");
  auto gateway = Subprocess::Spawn(
      {o.shoal, "--log-level", "warn", "gateway", "--nats", url, "--port", std::to_string(*port), "--io-threads",
       std::to_string(o.io_threads), "--max-in-flight", std::to_string(o.max_in_flight), "--max-queued-per-model",
       std::to_string(o.max_queued)},
      dir + "/gateway.log");
  const std::string expect = worker.ok() && gateway.ok() && WaitAccepting(*port) ? ReferenceAnswer(*port) : "";
  if (expect.empty()) {
    std::fprintf(stderr, "the cluster did not start (logs in %s)\n", dir.c_str());
    return 1;
  }
  const std::vector<Process> procs = {
      {"gateway", gateway->pid()}, {"worker", worker->pid()}, {"nats-server", (*nats)->pid()}};

  const double knee = o.knee > 0 ? o.knee : FindKnee(*port, o, expect);
  if (knee <= 0) {
    std::fprintf(stderr, "no goodput at all (logs in %s)\n", dir.c_str());
    return 1;
  }

  // [2/2] Twice the knee, open loop.
  const double rate = 2 * knee;
  std::printf("\n[2/2] overload: %.0f req/s offered (2× the knee), open loop, %d connections, %d s\n", rate,
              o.connections, o.seconds);
  std::vector<RssTrace> rss(procs.size());
  for (size_t i = 0; i < procs.size(); ++i) rss[i].start = RssMib(procs[i].pid);
  LoadSpec spec = Spec(*port, o.connections, rate, std::chrono::seconds(o.seconds));
  spec.warmup = std::chrono::seconds(2);
  spec.expect_body = expect;
  uint64_t last_ok = 0, last_rejected = 0;
  spec.progress = [&](const LoadProgress& p) {
    uint64_t rejected = 0;
    for (const auto& [status, n] : *p.status_counts) rejected += IsRejection(status) ? n : 0;
    std::string mem;
    for (size_t i = 0; i < procs.size(); ++i) {
      const double mib = RssMib(procs[i].pid);
      if (p.measuring) rss[i].samples.push_back(mib);
      char part[64];
      std::snprintf(part, sizeof(part), "  %s %.1f", procs[i].name.c_str(), mib);
      mem += part;
    }
    std::printf("  %4.0f s %s goodput %5llu/s  rejected %5llu/s  not ok %llu  RSS MiB:%s\n", p.elapsed_s,
                p.measuring ? " " : "w", static_cast<unsigned long long>(p.ok - last_ok),
                static_cast<unsigned long long>(rejected - last_rejected), static_cast<unsigned long long>(p.errors),
                mem.c_str());
    std::fflush(stdout);
    last_ok = p.ok;
    last_rejected = rejected;
  };
  const LoadResult r = RunLoad(spec);

  // Figures.
  std::vector<double> rejected_ms;
  for (size_t i = 0; i < r.error_latencies_ms.size(); ++i) {
    if (IsRejection(r.error_statuses[i])) rejected_ms.push_back(r.error_latencies_ms[i]);
  }
  // Correct answers that arrived within the window: were answers to fall
  // behind, requests_per_s (those due in the window, answered whenever)
  // would hide it.
  const double goodput = static_cast<double>(r.ok_in_window) / o.seconds;
  const double fraction = goodput / knee;
  const double reject_p50 = Percentile(rejected_ms, 50), reject_p99 = Percentile(rejected_ms, 99);
  uint64_t answered = 0;
  for (const auto& [status, n] : r.status_counts) answered += status != 0 ? n : 0;

  std::printf("\nresult (%d s at %.0f req/s offered, 2× the knee of %.0f req/s)\n", o.seconds, rate, knee);
  std::printf("  goodput            %8.0f req/s   goodput / knee %.3f   (target ≥ 0.90: %s)\n", goodput, fraction,
              fraction >= 0.9 ? "met" : "MISSED");
  if (rejected_ms.empty()) {
    std::printf("  rejected (503/429) none\n");
  } else {
    std::printf("  rejected (503/429) p50 %7.2f ms   p99 %7.2f ms   (target p99 ≤ 10 ms: %s)\n", reject_p50,
                reject_p99, reject_p99 <= 10 ? "met" : "MISSED");
  }
  std::printf("  accepted (200)     p50 %7.2f ms   p99 %7.2f ms\n", r.Percentile(50), r.Percentile(99));
  std::printf("  answers: %llu of %.0f offered;", static_cast<unsigned long long>(answered), rate * o.seconds);
  for (const auto& [status, n] : r.status_counts) {
    std::printf("  %s %llu", status == 0 ? "no answer" : std::to_string(status).c_str(),
                static_cast<unsigned long long>(n));
  }
  std::printf("  (wrong bodies: %llu)\n", static_cast<unsigned long long>(r.wrong));
  bool bounded = true;
  for (size_t i = 0; i < procs.size(); ++i) {
    const RssTrace& t = rss[i];
    std::printf("  %-11s RSS MiB: start %6.1f  peak %6.1f (1st half %6.1f, 2nd half %6.1f)  end %6.1f  %s\n",
                procs[i].name.c_str(), t.start, t.Peak(0, t.samples.size()), t.first_half_peak(),
                t.second_half_peak(), t.end(), t.bounded() ? "bounded" : "STILL GROWING");
    if (procs[i].name != "nats-server") bounded = bounded && t.bounded();
  }
  std::printf("  memory of gateway and worker: %s\n", bounded ? "bounded" : "NOT bounded");

  std::map<std::string, double> figures;
  figures["goodput_fraction_at_2x_knee"] = fraction;
  if (!rejected_ms.empty()) figures["reject_p99_ms"] = reject_p99;  // (JSON has no NaN)
  figures["overload_knee_rps"] = knee;
  figures["overload_goodput_rps"] = goodput;
  figures["overload_seconds"] = o.seconds;
  if (!rejected_ms.empty()) figures["overload_reject_p50_ms"] = reject_p50;
  if (!r.latencies_ms.empty()) figures["overload_accepted_p99_ms"] = r.Percentile(99);
  figures["overload_gateway_rss_peak_mib"] = rss[0].Peak(0, rss[0].samples.size());
  figures["overload_worker_rss_peak_mib"] = rss[1].Peak(0, rss[1].samples.size());
  figures["overload_memory_bounded"] = bounded ? 1 : 0;
  if (!o.out.empty()) MergeFigures(o.out, figures);

  gateway->Stop(SIGTERM, std::chrono::seconds(10));
  worker->Stop(SIGTERM, std::chrono::seconds(10));
  (*nats)->Stop();
  if (o.keep_dir) std::printf("logs kept in %s\n", dir.c_str());
  else std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Overload benchmark: goodput, rejection latency and memory at 2x the knee"};
  app.add_option("--shoal", o.shoal, "the shoal binary")->capture_default_str();
  app.add_option("--out", o.out, "JSON figures, merged into the file (empty: none)")->capture_default_str();
  app.add_option("--seconds", o.seconds, "seconds at 2x the knee")->capture_default_str();
  app.add_option("--step-seconds", o.step_seconds, "seconds per step of the knee sweep")->capture_default_str();
  app.add_option("--us-per-batch", o.us_per_batch, "simulated device time per batch")->capture_default_str();
  app.add_option("--max-batch-requests", o.max_batch_requests, "items per batch")->capture_default_str();
  app.add_option("--max-in-flight", o.max_in_flight, "the gateway's bound on requests in flight")
      ->capture_default_str();
  app.add_option("--max-queued-per-model", o.max_queued, "the model's bound in its work stream")
      ->capture_default_str();
  app.add_option("--connections", o.connections, "keep-alive connections of the overload phase")
      ->capture_default_str();
  app.add_option("--io-threads", o.io_threads, "the gateway's I/O threads")->capture_default_str();
  app.add_option("--knee", o.knee, "knee throughput, req/s (skips the sweep)");
  app.add_flag("--keep-dir", o.keep_dir, "keep the temporary directory (process logs)");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
