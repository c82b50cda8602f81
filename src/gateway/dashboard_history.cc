#include "gateway/dashboard_history.h"

#include <algorithm>

namespace shoal::gateway {
namespace {

// 0.1 ms to ~100 s, each bucket 15 % wider than the one before: fine enough
// that an interpolated percentile is close, few enough (100) that a sample
// costs nothing.
std::vector<double> LatencyBounds() { return ExponentialBuckets(0.0001, 1.15, 100); }

nlohmann::json Millis(const std::optional<double>& seconds) {
  if (!seconds) return nullptr;
  return *seconds * 1000;
}

}  // namespace

DashboardHistory::DashboardHistory(size_t capacity, SteadyClock::time_point start)
    : capacity_(std::max<size_t>(1, capacity)),
      latency_(LatencyBounds()),
      last_at_(start),
      last_counts_(latency_.bounds().size() + 1, 0) {
  ring_.reserve(capacity_);
}

void DashboardHistory::Record(int status, double seconds) {
  latency_.Observe(seconds);
  if (status >= 500)
    errors_.fetch_add(1, std::memory_order_relaxed);
  else if (status >= 400)
    client_errors_.fetch_add(1, std::memory_order_relaxed);
}

std::optional<double> DashboardHistory::Quantile(const std::vector<double>& bounds,
                                                 const std::vector<uint64_t>& counts, double q) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return std::nullopt;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
  uint64_t below = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const uint64_t c = counts[i];
    if (c == 0 || static_cast<double>(below + c) < rank) {
      below += c;
      continue;
    }
    if (i >= bounds.size()) return bounds.empty() ? 0.0 : bounds.back();  // above the last bound
    const double lower = i == 0 ? 0.0 : bounds[i - 1];
    return lower +
           (bounds[i] - lower) * (rank - static_cast<double>(below)) / static_cast<double>(c);
  }
  return bounds.empty() ? 0.0 : bounds.back();  // not reached: rank <= total
}

void DashboardHistory::Sample(SteadyClock::time_point now, int64_t unix_ms, size_t in_flight) {
  std::lock_guard lock(sample_mu_);
  const double seconds = std::chrono::duration<double>(now - last_at_).count();
  if (seconds <= 0) return;
  // Read the counters once: what arrives while this runs counts in the next
  // interval, never in none or both.
  const std::vector<uint64_t> cumulative = latency_.CumulativeCounts();
  const uint64_t errors = errors_.load(std::memory_order_relaxed);
  const uint64_t client_errors = client_errors_.load(std::memory_order_relaxed);

  std::vector<uint64_t> interval(cumulative.size());
  uint64_t prev_now = 0, prev_then = 0;
  for (size_t i = 0; i < cumulative.size(); ++i) {
    // Per bucket, this interval: (cumulative now - below now) - (then - below then).
    const uint64_t now_i = cumulative[i] - prev_now, then_i = last_counts_[i] - prev_then;
    // A bucket's count only grows, but the snapshot reads buckets one by one
    // while lanes observe: never let a race show as a huge unsigned count.
    interval[i] = now_i >= then_i ? now_i - then_i : 0;
    prev_now = cumulative[i];
    prev_then = last_counts_[i];
  }

  DashboardSample s;
  s.unix_ms = unix_ms;
  s.seconds = seconds;
  for (uint64_t c : interval) s.responses += c;
  s.errors = errors - last_errors_;
  s.client_errors = client_errors - last_client_errors_;
  s.p50_seconds = Quantile(latency_.bounds(), interval, 0.50);
  s.p99_seconds = Quantile(latency_.bounds(), interval, 0.99);
  s.in_flight = in_flight;

  last_at_ = now;
  last_counts_ = cumulative;
  last_errors_ = errors;
  last_client_errors_ = client_errors;

  std::lock_guard ring_lock(ring_mu_);
  if (ring_.size() < capacity_) {
    ring_.push_back(s);
  } else {
    ring_[next_] = s;
    next_ = (next_ + 1) % capacity_;
  }
}

std::vector<DashboardSample> DashboardHistory::Samples() const {
  std::lock_guard lock(ring_mu_);
  std::vector<DashboardSample> out;
  out.reserve(ring_.size());
  // Once full, next_ is the oldest.
  for (size_t i = 0; i < ring_.size(); ++i) out.push_back(ring_[(next_ + i) % ring_.size()]);
  return out;
}

uint64_t DashboardHistory::total_responses() const { return latency_.CumulativeCounts().back(); }
uint64_t DashboardHistory::total_errors() const { return errors_.load(std::memory_order_relaxed); }

nlohmann::json DashboardHistory::ToJson() const {
  nlohmann::json samples = nlohmann::json::array();
  for (const DashboardSample& s : Samples()) {
    samples.push_back({{"t", s.unix_ms},
                       {"s", s.seconds},
                       {"rps", s.per_second(s.responses)},
                       {"errors_per_s", s.per_second(s.errors)},
                       {"client_errors_per_s", s.per_second(s.client_errors)},
                       {"p50_ms", Millis(s.p50_seconds)},
                       {"p99_ms", Millis(s.p99_seconds)},
                       {"in_flight", s.in_flight}});
  }
  return {{"responses_total", total_responses()},
          {"errors_total", total_errors()},
          {"samples", std::move(samples)}};
}

}  // namespace shoal::gateway
