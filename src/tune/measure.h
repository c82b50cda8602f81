// How the tuning loop measures one candidate configuration: offered load
// at and around its knee, one level at a time, with early pruning. Pure
// over a "run one level" function, so it is tested on synthetic curves
// (tests/unit/tune_measure_test.cc); the tuner's function runs a one-level
// loadtest::RunSweep against the private cluster.
//
// Levels lie on one ladder (min_level × factor^k: 1, 2, 4, ... connections
// in a closed loop), so every candidate is measured at the same loads.
//
//   baseline   (reference 0) from min_level upward until the throughput
//              knee (the knee without the latency target) is found and
//              confirmed: two levels past it, or the last one outside the
//              criteria (loadtest::RunSweep's rule). Its knee level is the
//              reference for the others (its throughput knee's when no
//              level met the latency target).
//   candidate  first at the reference load (the probe): when its
//              throughput there is below `prune_below_rps` (the tuner: 80 %
//              of the best candidate's at the same load) it is pruned and
//              measured no further. Otherwise upward as the baseline, then
//              downward while its lowest level is over the latency target.
//
// Figures: the knee (loadtest::FindKnee with the latency target and no
// latency factor: the lowest level differs between candidates, so "p99 over
// 4x the lowest" would compare unlike things); knee_rps, its throughput;
// held_rps, the lower of knee_rps and the throughput one level past the
// knee — what the configuration keeps when offered more than its knee, the
// score the search maximizes, so a configuration whose throughput collapses
// past its peak (batches too large to pay off) does not win on a peak it
// cannot hold; feasible, whether the knee is within the criteria (its p99
// within the latency target).
//
// Threading: runs on the caller's thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "loadtest/sweep.h"

namespace shoal::tune {

struct LadderOptions {
  loadtest::KneeCriteria knee;  // the tuner sets latency_target_ms, latency_factor 0
  double min_level = 1, factor = 2, max_level = 1024;
};

struct Measurement {
  std::vector<loadtest::LevelResult> levels;  // ascending offered load
  loadtest::Knee knee;
  double knee_level = 0, knee_rps = 0, held_rps = 0, p99_at_knee_ms = 0;
  double throughput_knee_level = 0;  // the knee without the latency target
  double reference_rps = 0;          // throughput at the reference level (0: not measured)
  bool feasible = false;
  bool pruned = false;
  std::string note;  // why it was pruned, or why the knee is where it is
};

// Runs one level (offered load) and returns its result.
using RunLevel = std::function<Result<loadtest::LevelResult>(double level)>;

// Whether to stop before another level (the budget is spent): then the
// result is DEADLINE_EXCEEDED.
using OutOfTime = std::function<bool()>;

// `reference` 0: the baseline's sweep; else the probe level (on the ladder).
// `prune_below_rps` 0: never prune.
Result<Measurement> MeasureAroundKnee(const RunLevel& run, double reference, double prune_below_rps,
                                      const LadderOptions& options,
                                      const OutOfTime& out_of_time = {});

// The figures of a measurement from its levels (what MeasureAroundKnee
// fills in; exposed for tests and the final re-measurement).
void Summarize(Measurement* m, double reference, const LadderOptions& options);

}  // namespace shoal::tune
