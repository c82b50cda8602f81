// An HTTP/1.1 load generator on keep-alive connections, one thread, three
// ways to offer load:
//   closed loop     each connection sends its next request when the last one
//                   is answered (finds the maximum throughput);
//   open, fixed     requests are due at a fixed rate, spread round-robin over
//                   the connections (request k of connection c is due at
//                   (k * connections + c) / rate);
//   open, Poisson   requests are due at exponential gaps (seeded); a due
//                   request goes out on whichever connection is free, and the
//                   pool grows, up to `connections`, while none is.
// In both open loops latency counts from when a request was due, so a stall
// is charged to every request it delays (no coordinated omission).
//
// Plain HTTP only (no TLS). Responses may be sized by Content-Length, chunked,
// or closed; `Connection: close` is honoured (a new connection for the next
// request when `reconnect` is set).
//
// Threading: RunLoad runs an io_context on the calling thread; every
// connection is a coroutine on it, so the shared counters need no lock.
// `progress` is called on that thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace shoal::loadtest {

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
  // Input tokens to count for an ok answer that does not report its own
  // (no `usage` in the body): the whitespace-separated words of the request's
  // texts, an estimate. 0: unknown.
  uint64_t estimated_tokens = 0;
};

enum class Arrivals {
  kFixed,    // even spacing, each connection its share (the benchmarks' default)
  kPoisson,  // exponential gaps; any free connection; the pool grows to `connections`
};

struct LoadSpec {
  // A name or an address, resolved once before the run.
  std::string host = "127.0.0.1";
  int port = 0;
  std::string path;
  std::string content_type;
  std::string body;
  // When not empty, each request is drawn from the mix (seeded, so runs
  // repeat) instead of path/content_type/body.
  std::vector<MixEntry> mix;
  // Sent with every request (e.g. {"Authorization", "Bearer ..."}).
  std::vector<std::pair<std::string, std::string>> headers;
  uint64_t seed = 1;
  // Closed loop and fixed arrivals: the connections. Poisson arrivals: the
  // most connections the pool opens.
  int connections = 64;
  double rate = 0;  // requests/s; 0: closed loop
  Arrivals arrivals = Arrivals::kFixed;
  std::chrono::milliseconds warmup{1000};
  std::chrono::milliseconds duration{5000};
  // When > 0: how long after the measured window answers are awaited; the
  // measured requests still unanswered then (in flight, or never sent because
  // every connection was busy) count as errors with status 0, and the run
  // ends. 0: every request due in the window is sent and awaited.
  std::chrono::milliseconds drain{0};
  // A connection that breaks (or that the server closes) is opened again for
  // the next request; otherwise it ends, as do its remaining requests.
  bool reconnect = false;
  // Count the input (and output) tokens of ok answers from their `usage`,
  // else from the mix entry's estimated_tokens.
  bool count_tokens = false;
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
  // With count_tokens, over the ok_in_window answers: input and output
  // (generated) tokens, and how many of those answers had no `usage`, so
  // that their input tokens are the mix entry's estimate.
  uint64_t input_tokens = 0, output_tokens = 0;
  uint64_t tokens_estimated = 0;
  // Measured requests the drain deadline abandoned (also in errors, status 0).
  uint64_t unanswered = 0;
  std::vector<double> latencies_ms;  // of measured, successful requests
  std::vector<uint32_t> entries;     // the mix entry of each (as latencies_ms)
  std::vector<uint8_t> cold_starts;  // its X-Shoal-Cold-Start was 1 (as latencies_ms)
  // Measured requests per HTTP status; 0: no answer (the connection broke
  // or could not be made, or the drain deadline passed).
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

// One request and its whole answer, on a fresh connection: the reachability
// check before a sweep (and a first request that warms a cold model).
struct Answer {
  int status = 0;
  std::string body;
};
Result<Answer> SendOnce(const std::string& host, int port, const MixEntry& request,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        std::chrono::milliseconds timeout);

}  // namespace shoal::loadtest
