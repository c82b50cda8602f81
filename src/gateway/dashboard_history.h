// DashboardHistory: what the dashboard (dashboard.h) draws as "the last
// minutes" — a ring of samples of this gateway's traffic, kept in the
// gateway so that a page opened now shows the past ten minutes at once,
// not only what it sees from then on.
//
// Responses are recorded as they are counted (status, seconds from arrival
// to the response head); every period a sampler closes the interval since
// the previous sample into one entry: responses and errors per second, the
// p50 and p99 latency of that interval alone, and the requests in flight at
// that moment. Per-interval percentiles come from a fine latency histogram
// whose cumulative counts are differenced between samples (Prometheus'
// histogram_quantile over a rate, done here: linear within a bucket, whose
// bounds grow by 15 %, so a percentile is off by at most that).
//
// Errors are responses with status 500 and above (the gateway's or the
// cluster's fault: overload, no capacity, deadlines, failed inferences);
// 4xx (bad input, unknown models, auth, rate limits) count as responses
// only, and separately as `client_errors`.
//
// Threading: Record is lock-free (atomics, from any lane); Sample is called
// by one thread at a time (the sampler; sample_mu_ makes sure); Samples and
// ToJson from any thread (the ring has its own lock, ring_mu_).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/metrics.h"

namespace shoal::gateway {

struct DashboardSample {
  int64_t unix_ms = 0;         // when the interval ended
  double seconds = 0;          // how long it was
  uint64_t responses = 0;      // in the interval, of any status
  uint64_t errors = 0;         // status >= 500
  uint64_t client_errors = 0;  // 400..499
  // Latency of the interval's responses; empty when there were none.
  std::optional<double> p50_seconds, p99_seconds;
  size_t in_flight = 0;  // at the end of the interval

  double per_second(uint64_t n) const { return seconds > 0 ? n / seconds : 0; }
};

class DashboardHistory {
 public:
  // `capacity` samples are kept (the oldest dropped first); the first
  // interval starts at `start`.
  explicit DashboardHistory(size_t capacity, SteadyClock::time_point start = SteadyClock::now());

  // One response, `seconds` after its request arrived.
  void Record(int status, double seconds);

  // Closes the interval since the previous Sample (or since construction)
  // at `now` into a sample stamped `unix_ms`. An interval of no length
  // (two samples at once) is dropped.
  void Sample(SteadyClock::time_point now, int64_t unix_ms, size_t in_flight);

  // Oldest first.
  std::vector<DashboardSample> Samples() const;
  size_t capacity() const { return capacity_; }
  // Responses and errors recorded since construction.
  uint64_t total_responses() const;
  uint64_t total_errors() const;

  // {"responses_total", "errors_total", "samples": [{"t" (unix ms), "s",
  //  "rps", "errors_per_s", "client_errors_per_s", "p50_ms", "p99_ms"
  //  (null without responses), "in_flight"}, ...]} — oldest first.
  nlohmann::json ToJson() const;

  // The `q` quantile (0..1) of observations whose per-bucket counts are
  // `counts` (not cumulative; one per bound, then one above the last) under
  // `bounds`; empty when there are none. Linear within the bucket; one
  // above the last bound reads as the last bound.
  static std::optional<double> Quantile(const std::vector<double>& bounds,
                                        const std::vector<uint64_t>& counts, double q);

 private:
  const size_t capacity_;
  Histogram latency_;  // seconds, every response
  std::atomic<uint64_t> errors_{0}, client_errors_{0};

  std::mutex sample_mu_;
  SteadyClock::time_point last_at_;    // guarded by sample_mu_
  std::vector<uint64_t> last_counts_;  // cumulative, at the last sample; guarded by sample_mu_
  uint64_t last_errors_ = 0, last_client_errors_ = 0;  // guarded by sample_mu_

  mutable std::mutex ring_mu_;
  std::vector<DashboardSample> ring_;  // guarded by ring_mu_
  size_t next_ = 0;  // where the next sample goes, once ring_ is full; guarded by ring_mu_
};

}  // namespace shoal::gateway
