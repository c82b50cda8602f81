// Load sweeps and the knee: what `shoal bench` reports and `shoal tune`
// optimizes.
//
// A sweep offers a gateway (Shoal's or any OpenAI-compatible server) rising
// load — concurrency in a closed loop, a Poisson request rate in an open
// loop — for a fixed time per level, and records throughput and latency at
// each level. The knee is the level past which more offered load no longer
// buys throughput: throughput stops rising (or falls), or latency climbs
// past the target. FindKnee is a pure function of the recorded levels, so
// it is tested on synthetic curves with known knees.
//
// Throughput at a level is the ok answers that arrived within its measured
// window, per second; latencies are of the ok answers to the requests due in
// that window, counted from when each was due (sent, in a closed loop).
// Tokens come from each answer's `usage` (usage.h); an
// answer without one counts its mix entry's estimate (words), and the level
// says so (tokens_estimated).
//
// Threading: RunSweep runs its levels one after another on the caller's
// thread (the load generator is one thread per level); `progress` is called
// on that thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "loadtest/load_generator.h"

namespace shoal::loadtest {

enum class LoopKind {
  kClosed,  // level = connections, each sends its next request when answered
  kOpen,    // level = requests/s, Poisson arrivals, latency counted from due time
};

// Where the load goes and what it sends.
struct Target {
  std::string host = "127.0.0.1";
  int port = 0;
  // The requests, drawn by weight (seeded). Each names its own path, so one
  // mix may span routes (native and OpenAI-compatible alike).
  std::vector<MixEntry> mix;
  // Sent with every request (e.g. {"Authorization", "Bearer ..."}).
  std::vector<std::pair<std::string, std::string>> headers;
};

// The measurements at one offered load.
struct LevelResult {
  double offered = 0;                         // connections (closed) or requests/s (open)
  double throughput_rps = 0;                  // ok answers within the measured window, per second
  double tokens_per_s = 0;                    // input tokens of ok answers per second (0: unknown)
  double output_tokens_per_s = 0;             // generated tokens of ok answers per second
  bool tokens_estimated = false;              // some answers had no usage: words counted instead
  double p50_ms = 0, p95_ms = 0, p99_ms = 0;  // of ok answers (0 when none)
  // Requests due in the measured window: answered 200, and all the others.
  uint64_t ok = 0, errors = 0;
  // Those by HTTP status; 0: no answer (the connection failed, or none came
  // by the drain deadline).
  std::map<int, uint64_t> status_counts;
};

struct KneeCriteria {
  // A level whose throughput rises less than this fraction over the best
  // before it counts as "no longer rising".
  double min_gain = 0.05;
  // Latency climbs: p99 over this many times the lowest p99 seen.
  double latency_factor = 4.0;
  // When > 0, a level whose p99 is above it is past the knee.
  double latency_target_ms = 0;
  // Error rate above this fraction of answers: past the knee.
  double max_error_fraction = 0.01;
};

struct Knee {
  bool found = false;  // false: throughput was still rising at the last level
  size_t index = 0;    // into the levels; the last level when !found
  LevelResult at;      // levels[index]
  std::string reason;  // what the level after the knee showed, in words
};

// The knee of a curve given in increasing offered load: the level with the
// highest throughput among those within the criteria, provided a later level
// shows the curve has turned (no gain, latency climbing, errors). Empty
// input: found = false, index 0.
//
// Precisely: a level is within the criteria when it has ok answers, its
// error fraction is at most max_error_fraction, its p99 is at most
// latency_target_ms (when set) and at most latency_factor times the lowest
// p99 of the levels up to it. Among those, M is the highest throughput; the
// knee is the first of them whose throughput is within min_gain of M
// (>= M / (1 + min_gain)), so a plateau's creep does not push the knee to
// its far end. It is found when any level follows it: each later level is
// then outside the criteria or gains less than min_gain over it. When no
// level is within the criteria the knee is found at index 0 (the curve had
// turned before the lowest level).
Knee FindKnee(const std::vector<LevelResult>& levels, const KneeCriteria& criteria = {});

// Why levels[i] is outside the criteria, in words ("" when within), as
// FindKnee judges it.
std::string OutsideCriteria(const std::vector<LevelResult>& levels, size_t i,
                            const KneeCriteria& criteria = {});

struct SweepProgress {
  size_t level_index = 0, level_count = 0;  // level_count 0: open-ended sweep
  double offered = 0;
  // Since the level began, warm-up included; its warm-up + duration.
  double level_elapsed_s = 0, level_duration_s = 0;
  uint64_t ok = 0, errors = 0;  // so far at this level
  // Set once per level, when it has been measured (then elapsed == duration).
  const LevelResult* finished = nullptr;
};

struct SweepOptions {
  LoopKind loop = LoopKind::kClosed;
  // The levels to offer, increasing. Empty: start at `start` and multiply by
  // `factor` until the knee is passed (FindKnee found) or `max_level`.
  // Closed-loop levels are whole connections (rounded; a generated sequence
  // rises by at least one each step).
  //
  // An open-ended sweep stops once the knee is found and the curve confirms
  // it: two levels past the knee, or the last level outside the criteria.
  std::vector<double> levels;
  double start = 1, factor = 2, max_level = 1024;
  std::chrono::milliseconds warmup{1000};
  std::chrono::milliseconds duration{5000};
  // After a level's window, how long its last answers are awaited; those
  // still missing then count as errors without an answer (status 0).
  std::chrono::milliseconds drain{10000};
  // Open loop: the most connections a level opens (the pool grows while all
  // are busy; past it, due requests wait for one, and the wait is latency).
  int max_connections = 1024;
  KneeCriteria knee;
  uint64_t seed = 1;
  std::function<void(const SweepProgress&)> progress;  // about once a second
};

struct SweepReport {
  LoopKind loop = LoopKind::kClosed;
  std::vector<LevelResult> levels;
  Knee knee;
  bool tokens_estimated = false;  // some level's tokens are estimates
};

// Runs the sweep; an unreachable target is an error before any level runs.
// Before the first level, one request per distinct path of the mix (up to 8)
// is sent: no answer, or a 4xx other than 408 and 429 (a wrong model, a
// missing key), is an error naming the path and the answer.
Result<SweepReport> RunSweep(const Target& target, const SweepOptions& options);

}  // namespace shoal::loadtest
