#include "tune/tuner.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <tuple>

#include "common/hardware.h"
#include "common/str_printf.h"
#include "loadtest/mix.h"
#include "tune/private_cluster.h"
#include "tune/search.h"

namespace shoal::tune {
namespace {

using Clock = std::chrono::steady_clock;


std::string TodayUtc() {
  const time_t now = time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Figures(const Measurement& m) {
  if (m.pruned) return m.note;
  return StrPrintf("knee %.1f req/s at %g (p99 %.1f ms), holds %.1f%s", m.knee_rps, m.knee_level,
                m.p99_at_knee_ms, m.held_rps, m.feasible ? "" : " — over the latency target");
}

}  // namespace

Result<RequestMix> MixForTask(const std::string& model_id, Task task) {
  RequestMix mix;
  loadtest::GeneratedMix g;
  g.model = model_id;
  g.distinct = 32;
  if (task == Task::kEncode) {
    // Single texts, the fine-grained requests Shoal is for: half short
    // query-like ones, half passage chunks.
    g.route = loadtest::Route::kEncode;
    for (auto [lo, hi, seed] : {std::tuple{8, 16, 1}, std::tuple{32, 64, 2}}) {
      g.min_words = lo;
      g.max_words = hi;
      g.seed = static_cast<uint64_t>(seed);
      auto entries = loadtest::GenerateMix(g);
      if (!entries.ok()) return entries.status();
      mix.entries.insert(mix.entries.end(), entries->begin(), entries->end());
    }
    mix.description =
        "POST /v1/encode, one text per request: half query-like (8-16 words), half passage-like "
        "(32-64 words), about 30 words on average";
  } else if (task == Task::kScore) {
    g.route = loadtest::Route::kScore;
    g.items = 8;
    g.min_words = 16;
    g.max_words = 48;
    auto entries = loadtest::GenerateMix(g);
    if (!entries.ok()) return entries.status();
    mix.entries = std::move(entries).value();
    mix.description = "POST /v1/score, a query and 8 texts of 16-48 words per request";
  } else {
    return InvalidInput(
        "task " + std::string(TaskName(task)) +
        ": shoal tune tunes encode and score models (a generator's running batch is "
        "bounded by its own engine; tune it by hand for now)");
  }
  return mix;
}

Result<TuneResult> RunTune(const ModelSpec& spec, const TuneOptions& o) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(o.budget_minutes * 60));
  const auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  const ModelSpec base = spec.WithoutTuned();
  const HardwareInfo& hw = ThisHardware();
  // Precisions other than f32 are searched only within their bound.
  std::vector<PrecisionCheck> precision_checks;
  const bool sweeps_precision =
      o.params.empty() || std::find(o.params.begin(), o.params.end(), "precision") != o.params.end();
  if (sweeps_precision) {
    auto checked = CheckPrecisions(base, TunablePrecisions(base), say);
    if (!checked.ok()) return checked.status();
    precision_checks = std::move(checked).value();
  }
  std::vector<std::string> refused;
  for (const PrecisionCheck& c : precision_checks) {
    if (!c.passed) refused.push_back(c.precision);
  }
  auto space = BuildSpace(base, hw.cores, o.params, refused);
  if (!space.ok()) return space.status();
  auto described = MixForTask(base.id, base.task);
  if (!described.ok()) return described.status();

  TuneResult result;
  result.model_id = base.id;
  result.hardware_class = CurrentHardwareClass();
  result.hardware = hw.Description();
  result.date = TodayUtc();
  result.request_mix = described->description;
  result.options = o;
  result.baseline = space->At(space->start);
  result.precision_checks = std::move(precision_checks);

  LadderOptions ladder;
  ladder.knee.latency_target_ms = o.latency_target_ms;
  ladder.knee.latency_factor = 0;  // measure.h: the lowest level differs between candidates
  if (o.loop == loadtest::LoopKind::kOpen) {
    ladder.min_level = 10;
    ladder.max_level = 1e5;
  }

  auto cluster = PrivateCluster::Start({.executors = o.executors});
  if (!cluster.ok()) return cluster.status();
  say(
      StrPrintf("tune: %s on %s (%s); private cluster at 127.0.0.1:%d; budget %.1f min; latency "
             "target %.0f ms",
             base.id.c_str(), result.hardware_class.c_str(), result.hardware.c_str(),
             (*cluster)->gateway_port(), o.budget_minutes, o.latency_target_ms));
  say("tune: load: " + result.request_mix +
      (o.loop == loadtest::LoopKind::kClosed ? ", closed loop" : ", open loop"));

  int installs = 0;
  double last_rps = 0;  // the throughput of the level measured last (for the next level's length)
  // Installs `p` under a fresh id and measures it.
  const auto measure = [&](const Params& p, double reference, double prune_below,
                           const OutOfTime& out_of_time) -> Result<Measurement> {
    ModelSpec s = WithParams(base, p);
    s.id = base.id + ".t" + std::to_string(installs++);
    auto mix = MixForTask(s.id, s.task);
    if (!mix.ok()) return mix.status();
    SHOAL_RETURN_IF_ERROR((*cluster)->Install(s, mix->entries.front(), std::chrono::seconds(600)));
    loadtest::Target target;
    target.port = (*cluster)->gateway_port();
    target.mix = mix->entries;
    uint64_t seed = 1;
    // One level; too few answers for a p99 (a slow model, a busy machine)
    // and it runs once more, long enough for min_answers at the rate seen.
    const RunLevel run = [&](double level) -> Result<loadtest::LevelResult> {
      const double longest = 10 * o.level_seconds;
      double seconds = o.level_seconds;
      if (last_rps > 0)
        seconds = std::clamp(1.2 * o.min_answers / last_rps, o.level_seconds, longest);
      for (;;) {
        loadtest::SweepOptions so;
        so.loop = o.loop;
        so.levels = {level};
        so.warmup = std::chrono::milliseconds(static_cast<int64_t>(o.warmup_seconds * 1000));
        so.duration = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
        so.drain = std::chrono::seconds(5);
        so.knee = ladder.knee;
        so.seed = seed++;
        auto report = loadtest::RunSweep(target, so);
        if (!report.ok()) return report.status();
        if (report->levels.empty()) return Internal("the sweep measured no level");
        const loadtest::LevelResult& l = report->levels.front();
        say(StrPrintf("tune:     load %g: %.1f req/s, p50 %.1f ms, p99 %.1f ms%s (%.1f s)", level,
                   l.throughput_rps, l.p50_ms, l.p99_ms,
                   l.errors
                       ? StrPrintf(", %llu errors", static_cast<unsigned long long>(l.errors)).c_str()
                       : "",
                   seconds));
        if (l.throughput_rps > 0) last_rps = l.throughput_rps;
        if (l.ok >= static_cast<uint64_t>(o.min_answers) || seconds >= longest ||
            l.throughput_rps <= 0)
          return l;
        seconds = std::min(longest, std::max(2 * seconds, 1.2 * o.min_answers / l.throughput_rps));
      }
    };
    return MeasureAroundKnee(run, reference, prune_below, ladder, out_of_time);
  };

  // The baseline, swept from the bottom.
  say("tune: baseline (the profile's own values): " + result.baseline.Describe());
  const auto b0 = Clock::now();
  auto baseline = measure(result.baseline, 0, 0, [&] { return Clock::now() > deadline; });
  if (!baseline.ok()) return baseline.status();
  const double baseline_seconds = Seconds(Clock::now() - b0);
  result.reference_level =
      baseline->feasible ? baseline->knee_level : baseline->throughput_knee_level;
  Summarize(&*baseline, result.reference_level, ladder);
  say("tune: baseline: " + Figures(*baseline));
  result.candidates.push_back({0, result.baseline, *baseline, baseline_seconds, false});

  std::map<Point, size_t> by_point = {{space->start, 0}};
  double longest = 0;  // the longest full (unpruned) candidate measurement, seconds
  const auto reserve = [&] {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(longest > 0 ? 2 * longest : baseline_seconds));
  };
  const auto outcome_of = [&](const Measurement& m) {
    return Outcome{m.feasible ? m.held_rps : -m.p99_at_knee_ms, m.feasible, m.pruned};
  };

  bool stopped_at_max = false;
  const Evaluate evaluate = [&](const Point& p, const Point& best) -> std::optional<Outcome> {
    if (p == space->start) return outcome_of(result.candidates[0].measurement);
    if (o.max_candidates > 0 && static_cast<int>(result.candidates.size()) > o.max_candidates) {
      stopped_at_max = true;
      return std::nullopt;
    }
    if (Clock::now() + reserve() > deadline) return std::nullopt;
    // Copied: result.candidates grows below.
    const CandidateResult incumbent = result.candidates[by_point.at(best)];
    const double prune_below = o.prune_fraction * incumbent.measurement.reference_rps;
    const Params params = space->At(p);
    const int index = static_cast<int>(result.candidates.size());
    const double left = Seconds(deadline - Clock::now()) / 60;
    const double per = Seconds(Clock::now() - t0) / 60 / index;
    say(StrPrintf("tune: candidate %d/~%d: %s", index,
               index + static_cast<int>(std::max(0.0, left / per)), params.Describe().c_str()));
    const auto c0 = Clock::now();
    auto m = measure(params, result.reference_level, prune_below,
                     [&] { return Clock::now() + reserve() / 2 > deadline; });
    if (!m.ok() && m.status().code() == Code::kDeadlineExceeded) {
      say("tune: budget spent during candidate " + std::to_string(index) + "; not counted");
      return std::nullopt;
    }
    Measurement measured;
    if (!m.ok()) {
      // A configuration the model cannot run (it fails to load, or every
      // request fails) is a bad candidate, not the end of the loop.
      measured.pruned = true;
      measured.note = "failed: " + m.status().ToString();
    } else {
      measured = std::move(m).value();
    }
    const double seconds = Seconds(Clock::now() - c0);
    if (!measured.pruned) longest = std::max(longest, seconds);
    result.candidates.push_back({index, params, measured, seconds, false});
    by_point[p] = result.candidates.size() - 1;
    const Outcome out = outcome_of(measured);
    const CandidateResult leader = Beats(out, outcome_of(incumbent.measurement), o.min_improvement)
                                       ? result.candidates.back()
                                       : incumbent;
    say(StrPrintf("tune: candidate %d: %s | best so far: #%d, holds %.1f req/s", index,
               Figures(measured).c_str(), leader.index, leader.measurement.held_rps));
    return out;
  };

  SearchOptions search_options;
  search_options.min_improvement = o.min_improvement;
  const SearchResult searched =
      CoordinateSearch(space->dims, space->start, evaluate, search_options);
  result.budget_spent = searched.budget_spent && !stopped_at_max;
  const size_t winner_at = by_point.at(searched.best);
  result.candidates[winner_at].best = true;
  result.winner = result.candidates[winner_at].params;
  result.winner_feasible = result.candidates[winner_at].measurement.feasible;
  say("tune: search " +
      std::string(stopped_at_max          ? "stopped at --max-candidates"
                  : searched.budget_spent ? "stopped on the budget"
                                          : "converged") +
      " after " + std::to_string(result.candidates.size()) +
      " configurations; best: " + result.winner.Describe());

  if (winner_at == 0) {
    result.final_baseline = result.final_winner = result.candidates[0].measurement;
  } else {
    // Both once more, back to back, at the same loads.
    say("tune: re-measuring the baseline and the winner");
    auto fb = measure(result.baseline, result.reference_level, 0, {});
    if (!fb.ok()) return fb.status();
    auto fw = measure(result.winner, result.reference_level, 0, {});
    if (!fw.ok()) return fw.status();
    result.final_baseline = *fb;
    result.final_winner = *fw;
  }
  const Measurement& fb = result.final_baseline;
  const Measurement& fw = result.final_winner;
  result.tuned_over_default = fb.knee_rps > 0 ? fw.knee_rps / fb.knee_rps : 0;
  result.held_tuned_over_default = fb.held_rps > 0 ? fw.held_rps / fb.held_rps : 0;
  result.minutes = Seconds(Clock::now() - t0) / 60;
  say(StrPrintf("tune: tuned %.1f req/s against %.1f untuned at the knee: %.2fx (%.1f min)",
             fw.knee_rps, fb.knee_rps, result.tuned_over_default, result.minutes));
  return result;
}

}  // namespace shoal::tune
