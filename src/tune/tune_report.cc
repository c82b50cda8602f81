#include "tune/tune_report.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/file.h"
#include "catalog/model_spec.h"
#include "tune/profile_writer.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "unknown"
#endif
#ifndef SHOAL_GIT_DESCRIBE
#define SHOAL_GIT_DESCRIBE ""
#endif

namespace shoal::tune {
namespace {

using ojson = nlohmann::ordered_json;

// Figures to 4 significant digits: the evidence is read by people, and
// noise is larger than that.
double Round(double v) {
  if (v == 0 || !std::isfinite(v)) return 0;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::abs(v))));
  return std::round(v * scale) / scale;
}

// Whole numbers as integers ("32", not "32.0").
ojson Num(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15) return static_cast<int64_t>(v);
  return v;
}

const char* Loop(loadtest::LoopKind k) {
  return k == loadtest::LoopKind::kClosed ? "closed" : "open";
}

ojson ParamsJson(const Params& p) {
  ojson j = {{"max_batch_tokens", p.max_batch_tokens},
             {"max_batch_requests", p.max_batch_requests},
             {"max_batch_wait_ms", p.max_batch_wait_ms},
             {"threads", p.threads}};
  if (!p.precision.empty()) j["precision"] = p.precision;
  return j;
}

ojson MeasurementJson(const Measurement& m) {
  ojson levels = ojson::array();
  for (const auto& l : m.levels) {
    levels.push_back({{"offered", l.offered},
                      {"throughput_rps", Round(l.throughput_rps)},
                      {"tokens_per_s", Round(l.tokens_per_s)},
                      {"p50_ms", Round(l.p50_ms)},
                      {"p95_ms", Round(l.p95_ms)},
                      {"p99_ms", Round(l.p99_ms)},
                      {"ok", l.ok},
                      {"errors", l.errors}});
  }
  return {{"knee_rps", Round(m.knee_rps)},
          {"held_rps", Round(m.held_rps)},
          {"knee_load", m.knee_level},
          {"p99_ms_at_knee", Round(m.p99_at_knee_ms)},
          {"reference_rps", Round(m.reference_rps)},
          {"feasible", m.feasible},
          {"pruned", m.pruned},
          {"note", m.note},
          {"levels", levels}};
}

}  // namespace

std::string ShoalVersion() {
  const std::string git = SHOAL_GIT_DESCRIBE;
  return std::string(SHOAL_VERSION) + (git.empty() ? "" : " (git " + git + ")");
}

// The precisions checked before the search, each with the figures it was
// judged by (precision_gate.h): why a precision was or was not offered.
ojson PrecisionChecksJson(const TuneResult& r) {
  ojson out = ojson::object();
  const auto six = [](double v) { return std::round(v * 1e6) / 1e6; };
  for (const PrecisionCheck& c : r.precision_checks) {
    const ojson gate = ojson::parse(c.gate_json, nullptr, false);
    ojson e = {{"passed", c.passed}};
    if (gate.is_object()) {
      const ojson& g = gate["golden"];
      if (g.contains("mean_cosine")) {
        e["mean_cosine"] = six(g["mean_cosine"].get<double>());
        e["min_cosine"] = six(g["min_cosine"].get<double>());
      }
      e["agreement"] = six(g.value("agreement", 0.0));
      if (!c.passed) e["failures"] = gate["failures"];
    }
    out[c.precision] = e;
  }
  return out;
}

ojson TunedEntry(const TuneResult& r, const std::string& runtime) {
  ojson e;
  e["batching"] = {{"max_batch_tokens", r.winner.max_batch_tokens},
                   {"max_batch_requests", r.winner.max_batch_requests},
                   {"max_batch_wait_ms", r.winner.max_batch_wait_ms}};
  if (!r.winner.precision.empty()) e[runtime] = {{"precision", r.winner.precision}};
  e["threads"] = r.winner.threads;
  int pruned = 0;
  for (const auto& c : r.candidates) pruned += c.measurement.pruned ? 1 : 0;
  e["evidence"] = {{"knee_rps", Round(r.final_winner.knee_rps)},
                   {"default_knee_rps", Round(r.final_baseline.knee_rps)},
                   {"tuned_over_default", Round(r.tuned_over_default)},
                   {"held_rps", Round(r.final_winner.held_rps)},
                   {"p99_ms_at_knee", Round(r.final_winner.p99_at_knee_ms)},
                   {"knee_load", Num(r.final_winner.knee_level)},
                   {"latency_target_ms", Num(r.options.latency_target_ms)},
                   {"loop", Loop(r.options.loop)},
                   {"candidates", r.candidates.size()},
                   {"pruned", pruned},
                   {"precisions_checked", PrecisionChecksJson(r)},
                   {"minutes", Round(r.minutes)},
                   {"date", r.date},
                   {"hardware", r.hardware},
                   {"shoal", ShoalVersion()}};
  return e;
}

Result<std::string> WriteTunedProfile(const std::string& path, const TuneResult& r,
                                      const std::string& runtime) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto rewritten = WriteTunedEntry(*text, r.hardware_class, TunedEntry(r, runtime));
  if (!rewritten.ok())
    return Status(rewritten.status().code(), path + ": " + rewritten.status().message());
  // The new file must read back as what was measured.
  auto spec = ModelSpec::Parse(*rewritten, r.hardware_class);
  if (!spec.ok())
    return Internal(path + ": the rewritten profile does not parse: " + spec.status().message());
  if (spec->batching.max_batch_requests != r.winner.max_batch_requests ||
      spec->batching.max_batch_tokens != r.winner.max_batch_tokens ||
      spec->batching.max_batch_wait_ms != r.winner.max_batch_wait_ms ||
      spec->threads != r.winner.threads) {
    return Internal(path + ": the rewritten profile does not apply the tuned entry as measured");
  }
  const std::string tmp = path + ".tune-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << *rewritten;
    if (!out) return Internal("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Internal("cannot replace " + path + ": " + ec.message());
  return rewritten;
}

std::string SummaryTable(const TuneResult& r) {
  std::string out;
  char line[512];
  for (const PrecisionCheck& c : r.precision_checks) {
    out += "precision " + c.Summary() + (c.passed ? "\n" : ": not searched\n");
  }
  std::snprintf(line, sizeof line, "%-4s %-46s %10s %6s %10s %9s  %s\n", "#", "configuration",
                "knee req/s", "load", "holds", "p99 ms", "");
  out += line;
  for (const auto& c : r.candidates) {
    const Measurement& m = c.measurement;
    std::string mark = c.best ? "best" : c.index == 0 ? "baseline" : "";
    if (c.index == 0 && c.best) mark = "baseline, best";
    if (m.pruned) mark = m.note.rfind("failed", 0) == 0 ? "failed" : "pruned";
    if (!m.pruned && !m.feasible) mark += mark.empty() ? "over target" : ", over target";
    if (m.pruned) {
      std::snprintf(line, sizeof line,
                    "%-4d %-46s %10s %6g %10s %9s  %s (%.1f req/s at the reference load)\n",
                    c.index, c.params.Describe().c_str(), "-", r.reference_level, "-", "-",
                    mark.c_str(), m.reference_rps);
    } else {
      std::snprintf(line, sizeof line, "%-4d %-46s %10.1f %6g %10.1f %9.1f  %s\n", c.index,
                    c.params.Describe().c_str(), m.knee_rps, m.knee_level, m.held_rps,
                    m.p99_at_knee_ms, mark.c_str());
    }
    out += line;
  }
  std::snprintf(line, sizeof line,
                "\n%s on %s: tuned %.1f req/s against %.1f untuned at the knee (%.2fx), p99 %.1f "
                "ms at the knee "
                "(target %.0f ms); %zu configurations in %.1f min%s\n",
                r.model_id.c_str(), r.hardware_class.c_str(), r.final_winner.knee_rps,
                r.final_baseline.knee_rps, r.tuned_over_default, r.final_winner.p99_at_knee_ms,
                r.options.latency_target_ms, r.candidates.size(), r.minutes,
                r.budget_spent ? " (the budget ended the search)" : "");
  out += line;
  return out;
}

ojson ResultJson(const TuneResult& r) {
  ojson candidates = ojson::array();
  for (const auto& c : r.candidates) {
    candidates.push_back({{"index", c.index},
                          {"params", ParamsJson(c.params)},
                          {"best", c.best},
                          {"seconds", Round(c.seconds)},
                          {"measurement", MeasurementJson(c.measurement)}});
  }
  return {{"model", r.model_id},
          {"hardware_class", r.hardware_class},
          {"hardware", r.hardware},
          {"date", r.date},
          {"shoal", ShoalVersion()},
          {"request_mix", r.request_mix},
          {"options",
           {{"latency_target_ms", r.options.latency_target_ms},
            {"budget_minutes", r.options.budget_minutes},
            {"loop", Loop(r.options.loop)},
            {"level_seconds", r.options.level_seconds},
            {"warmup_seconds", r.options.warmup_seconds},
            {"prune_fraction", r.options.prune_fraction},
            {"min_improvement", r.options.min_improvement}}},
          {"reference_load", r.reference_level},
          {"baseline", ParamsJson(r.baseline)},
          {"winner", ParamsJson(r.winner)},
          {"winner_feasible", r.winner_feasible},
          {"tuned_over_default", Round(r.tuned_over_default)},
          {"held_tuned_over_default", Round(r.held_tuned_over_default)},
          {"final_baseline", MeasurementJson(r.final_baseline)},
          {"final_winner", MeasurementJson(r.final_winner)},
          {"minutes", Round(r.minutes)},
          {"budget_spent", r.budget_spent},
          {"precisions_checked", PrecisionChecksJson(r)},
          {"candidates", candidates}};
}

}  // namespace shoal::tune
