#include "tune/measure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace shoal::tune {
namespace {

using loadtest::LevelResult;

// RunSweep's confirmation: two levels past the knee, or the last level
// outside the criteria.
bool Confirmed(const std::vector<LevelResult>& levels, const loadtest::KneeCriteria& c) {
  const loadtest::Knee knee = loadtest::FindKnee(levels, c);
  if (!knee.found) return false;
  const size_t last = levels.size() - 1;
  return last >= knee.index + 2 || !loadtest::OutsideCriteria(levels, last, c).empty();
}

loadtest::KneeCriteria ThroughputOnly(loadtest::KneeCriteria c) {
  c.latency_target_ms = 0;
  return c;
}

void Insert(std::vector<LevelResult>* levels, LevelResult l) {
  auto at =
      std::lower_bound(levels->begin(), levels->end(), l.offered,
                       [](const LevelResult& a, double offered) { return a.offered < offered; });
  levels->insert(at, std::move(l));
}

std::string Format(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

}  // namespace

void Summarize(Measurement* m, double reference, const LadderOptions& o) {
  if (m->levels.empty()) return;
  m->knee = loadtest::FindKnee(m->levels, o.knee);
  const LevelResult& k = m->levels[m->knee.index];
  m->knee_level = k.offered;
  m->knee_rps = k.throughput_rps;
  m->p99_at_knee_ms = k.p99_ms;
  m->held_rps = m->knee_rps;
  if (m->knee.index + 1 < m->levels.size()) {
    m->held_rps = std::min(m->knee_rps, m->levels[m->knee.index + 1].throughput_rps);
  }
  m->feasible = loadtest::OutsideCriteria(m->levels, m->knee.index, o.knee).empty();
  m->throughput_knee_level =
      m->levels[loadtest::FindKnee(m->levels, ThroughputOnly(o.knee)).index].offered;
  for (const LevelResult& l : m->levels) {
    if (reference > 0 && std::abs(l.offered - reference) < 1e-9)
      m->reference_rps = l.throughput_rps;
  }
  if (!m->pruned) m->note = m->knee.reason;
}

Result<Measurement> MeasureAroundKnee(const RunLevel& run, double reference, double prune_below_rps,
                                      const LadderOptions& o, const OutOfTime& out_of_time) {
  Measurement m;
  const auto measure = [&](double level) -> Status {
    if (out_of_time && out_of_time())
      return Status(Code::kDeadlineExceeded, "the tuning budget is spent");
    auto r = run(level);
    if (!r.ok()) return r.status();
    r->offered = level;
    Insert(&m.levels, std::move(r).value());
    return Status::Ok();
  };

  const double first = reference > 0 ? reference : o.min_level;
  SHOAL_RETURN_IF_ERROR(measure(first));
  if (reference > 0 && prune_below_rps > 0 && m.levels[0].throughput_rps < prune_below_rps) {
    m.pruned = true;
    m.note = Format("pruned: %.1f req/s at the reference load %g, under %.1f (the best's share)",
                    m.levels[0].throughput_rps, reference, prune_below_rps);
    Summarize(&m, reference, o);
    return m;
  }
  // Upward until the throughput knee is confirmed. The latency target
  // does not stop the climb: one slow level at the bottom (a stall on a busy
  // machine) would otherwise leave a curve of one point, and the levels past
  // the target are where held_rps and the baseline's reference are read.
  while (!Confirmed(m.levels, ThroughputOnly(o.knee))) {
    const double next = m.levels.back().offered * o.factor;
    if (next > o.max_level * (1 + 1e-9)) break;
    SHOAL_RETURN_IF_ERROR(measure(next));
  }
  // Downward while even the lowest level is over the latency target (or
  // otherwise outside the criteria) and the knee is there.
  for (;;) {
    const loadtest::Knee knee = loadtest::FindKnee(m.levels, o.knee);
    const double lowest = m.levels.front().offered;
    if (knee.index != 0 || loadtest::OutsideCriteria(m.levels, 0, o.knee).empty()) break;
    const double below = lowest / o.factor;
    if (below < o.min_level * (1 - 1e-9)) break;
    SHOAL_RETURN_IF_ERROR(measure(below));
  }
  Summarize(&m, reference, o);
  return m;
}

}  // namespace shoal::tune
