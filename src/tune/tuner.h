// The tuning loop behind `shoal tune`: find the configuration of one model
// with the highest knee throughput that meets a latency target, on this
// hardware, within a time budget.
//
//   1. A private cluster (private_cluster.h); a request mix for the model's
//      task (RequestMix below).
//   2. The baseline — the profile's own, untuned parameters — installed and
//      swept from the lowest load up past its knee (measure.h). Its knee
//      load is the reference every candidate is probed at.
//   3. The coordinate search (search.h) over the space (space.h), each
//      candidate installed and measured around its knee; one clearly worse
//      at the reference load than the best so far (under prune_fraction of
//      its throughput there) is pruned after that one level. Score: the
//      knee throughput held one level past the knee; feasible: p99 at the
//      knee within the latency target.
//   4. No new candidate once the time left would not cover step 5 (twice
//      the longest full measurement so far); the budget covers the whole
//      loop, from the cluster's start.
//   5. The winner and the baseline measured once more, one after the other
//      around the reference load, so the reported ratio comes from the same
//      conditions, not from measurements minutes apart.
//
// Progress goes to `progress`, a line at a time (the CLI prints it on
// stderr).
//
// Threading: RunTune runs on the caller's thread; the cluster it starts
// has its own threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "catalog/model_spec.h"
#include "common/status.h"
#include "loadtest/sweep.h"
#include "tune/measure.h"
#include "tune/precision_gate.h"
#include "tune/space.h"

namespace shoal::tune {

struct TuneOptions {
  double latency_target_ms = 100;
  double budget_minutes = 10;
  loadtest::LoopKind loop = loadtest::LoopKind::kClosed;
  double level_seconds = 3;   // measured per level
  double warmup_seconds = 1;  // before each level's window
  // A level lasts level_seconds, or long enough for this many answers at
  // the throughput of the level before (up to 10 x level_seconds): a p99 of
  // a dozen answers is noise. One that ends with fewer runs once more,
  // longer.
  int min_answers = 30;
  std::vector<std::string> params;  // the dimensions to sweep (space.h); empty: all that apply
  double prune_fraction = 0.8;
  double min_improvement = 0.03;  // search.h
  int max_candidates = 0;         // 0: as many as the budget allows
  int executors = 1;              // the private worker's
  std::function<void(const std::string&)> progress;
};

struct CandidateResult {
  int index = 0;  // 0: the baseline
  Params params;
  Measurement measurement;
  double seconds = 0;  // installing and measuring it
  bool best = false;   // the one chosen
};

struct TuneResult {
  std::string model_id;
  std::string hardware_class, hardware;  // key and description
  std::string date;                      // YYYY-MM-DD, UTC
  std::string request_mix;               // in words
  TuneOptions options;
  Params baseline, winner;
  // The precisions checked before the search (precision_gate.h); one
  // outside its bound was not searched.
  std::vector<PrecisionCheck> precision_checks;
  std::vector<CandidateResult> candidates;  // the baseline first
  Measurement final_baseline,
      final_winner;  // step 5 (equal to the search's when the winner is the baseline)
  double reference_level = 0;
  double tuned_over_default = 1;  // knee throughput, from step 5
  double held_tuned_over_default = 1;
  double minutes = 0;
  bool budget_spent = false;  // the search stopped on the budget, not on convergence
  bool winner_feasible = false;
};

// The request mix `shoal tune` offers a model of `task` (encode, score),
// and its description in words.
struct RequestMix {
  std::vector<loadtest::MixEntry> entries;
  std::string description;
};
Result<RequestMix> MixForTask(const std::string& model_id, Task task);

// `spec` is the profile as loaded (its tuned section, if any, is ignored:
// the baseline is what the profile says without it).
Result<TuneResult> RunTune(const ModelSpec& spec, const TuneOptions& options);

}  // namespace shoal::tune
