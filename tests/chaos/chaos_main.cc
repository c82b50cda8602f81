// shoal_chaos: the chaos suite (`make chaos`). Runs each scenario of
// scenarios.h against real processes, prints progress and a table, and
// exits 1 if any request was lost (or a scenario could not run); skipped
// scenarios (no network namespaces here) are reported, not failed.
//
//   shoal_chaos [--only NAME[,NAME]] [--out FILE] [--fleet-out FILE] [--json]
//               [--clients N] [--warm S] [--after S] [--keep] [--shoal PATH]
//               [--gateway-arg ARG]...
//
// --out merges the figures into FILE (a flat JSON object shared with the
// overload benchmark; bench/figures.h MergeFigures): chaos_scenarios,
// chaos_lost_total, and per scenario chaos_<name>_{sent,completed,failed,
// lost,recovery_s}. --fleet-out merges the cluster scenarios' into the
// fleet benchmark's file as it names them: leader_loss_recovery_s,
// leader_loss_slowest_answer_ms and leader_loss_hedged_items
// (nats_cluster_kill), partition_lost (worker_partition). --gateway-arg
// passes an argument on to every gateway (`--hedge-after-ms 0`: hedging
// off, the comparison's "before").
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench/figures.h"
#include "chaos/scenarios.h"
#include "common/log.h"

namespace {

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted = true; }

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

int Usage() {
  std::fprintf(stderr,
               "usage: shoal_chaos [--only NAME[,NAME]] [--out FILE] [--fleet-out FILE] [--json] [--clients N] [--warm S] "
               "[--after S] [--keep] [--shoal PATH] [--gateway-arg ARG]...\nscenarios:");
  for (const auto& n : shoal::chaos::ScenarioNames()) std::fprintf(stderr, " %s", n.c_str());
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shoal::chaos;
  ScenarioOptions o;
  o.shoal_binary = SHOAL_BINARY;
  std::vector<std::string> names = ScenarioNames();
  std::string out, fleet_out;
  bool json = false, keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--only") names = Split(value());
    else if (a == "--out") out = value();
    else if (a == "--fleet-out") fleet_out = value();
    else if (a == "--json") json = true;
    else if (a == "--keep") keep = true;
    else if (a == "--clients") o.clients = std::atoi(value().c_str());
    else if (a == "--warm") o.warm_s = std::atof(value().c_str());
    else if (a == "--after") o.after_s = std::atof(value().c_str());
    else if (a == "--shoal") o.shoal_binary = value();
    else if (a == "--gateway-arg") o.gateway_args.push_back(value());
    else return Usage();
  }
  if (names.empty() || o.clients < 1) return Usage();
  (void)shoal::InitLogging("warn");

  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  o.interrupted = &g_interrupted;
  o.progress = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  char tmpl[] = "/tmp/shoal-chaos-XXXXXX";
  o.dir = mkdtemp(tmpl);
  std::printf("shoal_chaos: %zu scenarios, %d clients each, logs in %s\n", names.size(), o.clients, o.dir.c_str());

  std::vector<ScenarioResult> results;
  for (const auto& name : names) {
    if (g_interrupted) break;
    std::printf("== %s\n", name.c_str());
    std::fflush(stdout);
    results.push_back(RunScenario(name, o));
    const auto& r = results.back();
    if (r.skipped) {
      std::printf("== %s: skipped (%s)\n", name.c_str(), r.skip_reason.c_str());
    } else if (!r.error.empty()) {
      std::printf("== %s: ERROR %s (logs in %s)\n", name.c_str(), r.error.c_str(), r.dir.c_str());
    } else {
      std::printf(
          "== %s: sent %lld, completed %lld, failed %lld, lost %lld, recovery %.1f s (slowest answer after the "
          "fault %.0f ms), %llu left in the stream (%llu acked but kept by nats-server)\n",
          name.c_str(), static_cast<long long>(r.tally.sent), static_cast<long long>(r.tally.completed),
          static_cast<long long>(r.tally.failed_explicit), static_cast<long long>(r.tally.lost), r.tally.recovery_s,
          r.tally.slowest_after_fault_ms, static_cast<unsigned long long>(r.left_in_stream),
          static_cast<unsigned long long>(r.ghosts_in_stream));
      if (r.hedged > 0) {
        std::printf("   %llu hedged cop(ies) of items sent straight to workers (shoal_gateway_hedged_items_total)\n",
                    static_cast<unsigned long long>(r.hedged));
      }
      for (const auto& e : r.tally.failure_examples) std::printf("   failed, e.g.: %s\n", e.c_str());
      for (const auto& e : r.tally.lost_examples) std::printf("   LOST: %s\n", e.c_str());
    }
    std::fflush(stdout);
  }

  // The table.
  std::printf("\n| scenario | sent | completed | failed (explicit) | lost | recovery s | redelivered |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  std::map<std::string, double> figures, fleet;
  int64_t lost_total = 0;
  int run = 0;
  bool failed = false;
  for (const auto& r : results) {
    if (r.skipped) {
      std::printf("| %s | skipped: %s | | | | | |\n", r.name.c_str(), r.skip_reason.c_str());
      continue;
    }
    if (!r.error.empty()) {
      std::printf("| %s | error: %s | | | | | |\n", r.name.c_str(), r.error.c_str());
      failed = true;
      continue;
    }
    ++run;
    const auto& t = r.tally;
    lost_total += t.lost;
    failed |= t.lost > 0;
    std::printf("| %s | %lld | %lld | %lld | %lld | %.2f | %lld |\n", r.name.c_str(), static_cast<long long>(t.sent),
                static_cast<long long>(t.completed), static_cast<long long>(t.failed_explicit),
                static_cast<long long>(t.lost), t.recovery_s, static_cast<long long>(t.retried));
    const std::string k = "chaos_" + r.name + "_";
    figures[k + "sent"] = static_cast<double>(t.sent);
    figures[k + "completed"] = static_cast<double>(t.completed);
    figures[k + "failed"] = static_cast<double>(t.failed_explicit);
    figures[k + "lost"] = static_cast<double>(t.lost);
    figures[k + "recovery_s"] = t.recovery_s;
    if (r.name == "nats_cluster_kill") {
      fleet["leader_loss_recovery_s"] = t.recovery_s;
      fleet["leader_loss_slowest_answer_ms"] = t.slowest_after_fault_ms;
      fleet["leader_loss_hedged_items"] = static_cast<double>(r.hedged);
    }
    if (r.name == "worker_partition") fleet["partition_lost"] = static_cast<double>(t.lost);
  }
  figures["chaos_scenarios"] = run;
  figures["chaos_lost_total"] = static_cast<double>(lost_total);
  std::printf("\nchaos: %d scenarios run, %lld lost in all%s\n", run, static_cast<long long>(lost_total),
              failed ? " - FAILED" : "");
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : results) {
      j.push_back({{"name", r.name},
                   {"skipped", r.skipped},
                   {"skip_reason", r.skip_reason},
                   {"error", r.error},
                   {"sent", r.tally.sent},
                   {"completed", r.tally.completed},
                   {"failed_explicit", r.tally.failed_explicit},
                   {"lost", r.tally.lost},
                   {"redelivered", r.tally.retried},
                   {"recovery_s", r.tally.recovery_s},
                   {"slowest_after_fault_ms", r.tally.slowest_after_fault_ms},
                   {"hedged", r.hedged},
                   {"left_in_stream", r.left_in_stream},
                   {"ghosts_in_stream", r.ghosts_in_stream},
                   {"failure_examples", r.tally.failure_examples},
                   {"lost_examples", r.tally.lost_examples}});
    }
    std::printf("%s\n", j.dump(2).c_str());
  }
  if (!out.empty() && !g_interrupted) shoal::bench::MergeFigures(out, figures);
  if (!fleet_out.empty() && !fleet.empty() && !g_interrupted) shoal::bench::MergeFigures(fleet_out, fleet);
  if (failed || g_interrupted) {
    std::printf("logs kept in %s\n", o.dir.c_str());
  } else if (!keep) {
    std::error_code ec;
    std::filesystem::remove_all(o.dir, ec);
  }
  return failed || g_interrupted ? 1 : 0;
}
