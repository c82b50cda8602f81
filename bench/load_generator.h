// An HTTP load generator on keep-alive connections, one thread, two modes:
//   closed loop  each connection sends its next request when the last one is
//                answered (finds the maximum throughput);
//   open loop    requests are due at a fixed rate, spread over the
//                connections; latency counts from when a request was due, so
//                a stall is charged to every request it delays (no
//                coordinated omission).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace shoal::bench {

// What a run has counted so far (measured requests only), for a progress
// report while it runs.
struct LoadProgress {
  double elapsed_s = 0;    // since the run started, warm-up included
  bool measuring = false;  // past the warm-up
  uint64_t ok = 0, errors = 0;
  const std::map<int, uint64_t>* status_counts = nullptr;  // valid during the call
};

// One kind of request in a mix, drawn with probability weight / total.
struct MixEntry {
  std::string path;
  std::string content_type;
  std::string body;
  double weight = 1;
};

struct LoadSpec {
  int port = 0;
  std::string path;
  std::string content_type;
  std::string body;
  // When not empty, each request is drawn from the mix (seeded, so runs
  // repeat) instead of path/content_type/body.
  std::vector<MixEntry> mix;
  uint64_t seed = 1;
  int connections = 64;
  double rate = 0;  // requests/s; 0: closed loop
  std::chrono::milliseconds warmup{1000};
  std::chrono::milliseconds duration{5000};
  // When not empty, a 200 counts as ok only if its body is exactly this
  // (goodput: correct answers); one that differs is counted in `wrong`.
  std::string expect_body;
  // When set, called about once a second on the generator's thread (keep it
  // short: requests wait while it runs).
  std::function<void(const LoadProgress&)> progress;
};

struct LoadResult {
  double requests_per_s = 0;  // ok requests due in the measured window, per second
  uint64_t ok = 0;
  uint64_t errors = 0;  // everything measured that was not ok
  uint64_t wrong = 0;   // 200s whose body was not expect_body (also in errors)
  // ok answers that arrived within the measured window, whenever they were
  // due: the completion rate (ok_in_window / duration). requests_per_s
  // counts the requests due in the window, however late their answers came,
  // which overstates it when answers fall far behind.
  uint64_t ok_in_window = 0;
  std::vector<double> latencies_ms;  // of measured, successful requests
  std::vector<uint32_t> entries;     // the mix entry of each (as latencies_ms)
  std::vector<uint8_t> cold_starts;  // its X-Shoal-Cold-Start was 1 (as latencies_ms)
  // Measured requests per HTTP status; 0: no answer (the connection broke
  // or could not be made).
  std::map<int, uint64_t> status_counts;
  // Measured requests that were answered with an error status (not 200):
  // how long the answer took, and its status (parallel vectors).
  std::vector<double> error_latencies_ms;
  std::vector<int> error_statuses;

  double Percentile(double p) const;
  // Of the error answers with `status` (0: every error status).
  double ErrorPercentile(double p, int status = 0) const;
};

// The p-th percentile of `v` (NaN when empty).
double Percentile(std::vector<double> v, double p);

LoadResult RunLoad(const LoadSpec& spec);

}  // namespace shoal::bench
