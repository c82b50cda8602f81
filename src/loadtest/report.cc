#include "loadtest/report.h"

#include <cstdio>

#include "common/str_printf.h"

namespace shoal::loadtest {
namespace {

using nlohmann::json;

json Ms(const LevelResult& l, double v) { return l.ok ? json(v) : json(nullptr); }


std::string LatencyCell(const LevelResult& l, double v) { return l.ok ? StrPrintf("%.1f", v) : "-"; }

}  // namespace

const char* LoopName(LoopKind loop) { return loop == LoopKind::kClosed ? "closed" : "open"; }

json LevelJson(const LevelResult& l) {
  json statuses = json::object();
  for (const auto& [status, n] : l.status_counts) statuses[std::to_string(status)] = n;
  const uint64_t answers = l.ok + l.errors;
  return {{"offered", l.offered},
          {"throughput_rps", l.throughput_rps},
          {"tokens_per_s", l.tokens_per_s},
          {"output_tokens_per_s", l.output_tokens_per_s},
          {"tokens_estimated", l.tokens_estimated},
          {"p50_ms", Ms(l, l.p50_ms)},
          {"p95_ms", Ms(l, l.p95_ms)},
          {"p99_ms", Ms(l, l.p99_ms)},
          {"ok", l.ok},
          {"errors", l.errors},
          {"error_fraction",
           answers ? static_cast<double>(l.errors) / static_cast<double>(answers) : 0.0},
          {"status_counts", statuses}};
}

json SweepJson(const SweepReport& report, const json& options) {
  json levels = json::array();
  for (const auto& l : report.levels) levels.push_back(LevelJson(l));
  const Knee& k = report.knee;
  json knee = {{"found", k.found}, {"index", k.index}, {"reason", k.reason}};
  if (!report.levels.empty()) {
    knee["offered"] = k.at.offered;
    knee["throughput_rps"] = k.at.throughput_rps;
    knee["tokens_per_s"] = k.at.tokens_per_s;
    knee["p50_ms"] = Ms(k.at, k.at.p50_ms);
    knee["p95_ms"] = Ms(k.at, k.at.p95_ms);
    knee["p99_ms"] = Ms(k.at, k.at.p99_ms);
  } else {
    for (const char* f :
         {"offered", "throughput_rps", "tokens_per_s", "p50_ms", "p95_ms", "p99_ms"})
      knee[f] = nullptr;
  }
  return {{"tool", "shoal bench"}, {"loop", LoopName(report.loop)},
          {"options", options},    {"tokens_estimated", report.tokens_estimated},
          {"levels", levels},      {"knee", knee}};
}

std::string SweepTable(const SweepReport& report) {
  const bool closed = report.loop == LoopKind::kClosed;
  std::string out =
      StrPrintf("  %-12s %12s %12s %10s %10s %10s %9s %s\n", closed ? "CONNECTIONS" : "OFFERED/S",
             "THROUGHPUT/S", "TOKENS/S", "P50 MS", "P95 MS", "P99 MS", "ERRORS", "");
  for (size_t i = 0; i < report.levels.size(); ++i) {
    const LevelResult& l = report.levels[i];
    const bool knee =
        i == report.knee.index && (report.knee.found || i + 1 == report.levels.size());
    const char* mark = !knee ? "" : report.knee.found ? "<- knee" : "<- best so far (no knee yet)";
    out +=
        StrPrintf("%s %-12g %12.1f %12.0f%s %10s %10s %10s %9llu %s\n", knee ? ">" : " ", l.offered,
               l.throughput_rps, l.tokens_per_s, l.tokens_estimated ? "*" : " ",
               LatencyCell(l, l.p50_ms).c_str(), LatencyCell(l, l.p95_ms).c_str(),
               LatencyCell(l, l.p99_ms).c_str(), static_cast<unsigned long long>(l.errors), mark);
  }
  if (report.tokens_estimated)
    out += "  * tokens estimated as words: some answers reported no usage\n";
  if (report.levels.empty()) return out + "no levels ran\n";
  const Knee& k = report.knee;
  if (k.found) {
    out += StrPrintf("knee: %g %s, %.1f req/s, p99 %s ms — %s\n", k.at.offered,
                  closed ? "connections" : "req/s offered", k.at.throughput_rps,
                  LatencyCell(k.at, k.at.p99_ms).c_str(), k.reason.c_str());
  } else {
    out += "knee: not found — " + k.reason + "; offer more load (--max, --levels)\n";
  }
  return out;
}

}  // namespace shoal::loadtest
