// FindKnee: pure, a function of the recorded levels (sweep.h has the
// definition); tested on synthetic curves in tests/unit/knee_test.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "loadtest/sweep.h"

namespace shoal::loadtest {
namespace {

std::string Format(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

// The lowest p99 among the levels up to `i` that had ok answers (0: none).
double LowestP99(const std::vector<LevelResult>& levels, size_t i) {
  double lowest = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k <= i; ++k) {
    if (levels[k].ok > 0 && std::isfinite(levels[k].p99_ms))
      lowest = std::min(lowest, levels[k].p99_ms);
  }
  return std::isfinite(lowest) ? lowest : 0;
}

std::string Offered(const LevelResult& l) { return Format("offered %g", l.offered); }

}  // namespace

std::string OutsideCriteria(const std::vector<LevelResult>& levels, size_t i,
                            const KneeCriteria& c) {
  const LevelResult& l = levels[i];
  if (l.ok == 0) return "no ok answers";
  const double error_fraction =
      static_cast<double>(l.errors) / static_cast<double>(l.ok + l.errors);
  if (error_fraction > c.max_error_fraction) {
    return Format("errors %.2f%% of answers (over %.2f%%)", 100 * error_fraction,
                  100 * c.max_error_fraction);
  }
  if (c.latency_target_ms > 0 && l.p99_ms > c.latency_target_ms) {
    return Format("p99 %.1f ms over the target %.1f ms", l.p99_ms, c.latency_target_ms);
  }
  const double lowest = LowestP99(levels, i);
  if (c.latency_factor > 0 && lowest > 0 && l.p99_ms > c.latency_factor * lowest) {
    return Format("p99 %.1f ms, over %g times the lowest p99 (%.1f ms)", l.p99_ms, c.latency_factor,
                  lowest);
  }
  return "";
}

Knee FindKnee(const std::vector<LevelResult>& levels, const KneeCriteria& c) {
  Knee knee;
  if (levels.empty()) {
    knee.reason = "no levels";
    return knee;
  }
  std::vector<bool> within(levels.size());
  double best = -1;
  for (size_t i = 0; i < levels.size(); ++i) {
    within[i] = OutsideCriteria(levels, i, c).empty();
    if (within[i]) best = std::max(best, levels[i].throughput_rps);
  }
  if (best < 0) {
    knee.found = true;
    knee.at = levels[0];
    knee.reason = "no level is within the criteria; the lowest (" + Offered(levels[0]) +
                  "): " + OutsideCriteria(levels, 0, c);
    return knee;
  }
  const double threshold = best / (1 + std::max(0.0, c.min_gain));
  size_t k = 0;
  while (!(within[k] && levels[k].throughput_rps >= threshold)) ++k;
  knee.index = k;
  knee.at = levels[k];
  if (k + 1 == levels.size()) {
    knee.reason = "throughput was still rising at the last level";
    return knee;
  }
  knee.found = true;
  const LevelResult& next = levels[k + 1];
  const std::string outside = OutsideCriteria(levels, k + 1, c);
  if (!outside.empty()) {
    knee.reason = "next level (" + Offered(next) + "): " + outside;
  } else if (levels[k].throughput_rps > 0) {
    const double gain = next.throughput_rps / levels[k].throughput_rps - 1;
    knee.reason = "next level (" + Offered(next) + "): throughput " +
                  (gain < 0 ? Format("fell %.1f%%", -100 * gain)
                            : Format("gained %.1f%% (under %.1f%%)", 100 * gain, 100 * c.min_gain));
  } else {
    knee.reason = "next level (" + Offered(next) + "): no gain";
  }
  return knee;
}

}  // namespace shoal::loadtest
