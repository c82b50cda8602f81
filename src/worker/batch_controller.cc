#include "worker/batch_controller.h"

#include <algorithm>
#include <cmath>

namespace shoal::worker {
namespace {

double Micros(SteadyClock::duration d) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

}  // namespace

void BatchController::Configure(const BatchingSpec& spec) {
  std::lock_guard lock(mu_);
  adaptive_ = spec.adaptive.enabled;
  fixed_us_ = 1000.0 * spec.max_batch_wait_ms;
  target_us_ = 1000.0 * spec.adaptive.target_ms;
  min_us_ = 1000.0 * spec.adaptive.min_wait_ms;
  max_us_ = 1000.0 * spec.adaptive.max_wait_ms;
  wait_us_ = min_us_;
  budget_ = spec.max_batch_tokens;
  max_requests_ = spec.max_batch_requests;
  cap_ = budget_;
  estimate_us_ = -1;
  any_report_ = false;
  idle_decayed_ = {};
}

uint32_t BatchController::CostCap() const {
  std::lock_guard lock(mu_);
  return static_cast<uint32_t>(std::max(1.0, cap_));
}

bool BatchController::adaptive() const {
  std::lock_guard lock(mu_);
  return adaptive_;
}

double BatchController::LatencyEstimateMs() const {
  std::lock_guard lock(mu_);
  return estimate_us_ < 0 ? -1.0 : estimate_us_ / 1000.0;
}

void BatchController::DecayLocked(SteadyClock::time_point busy_since) {
  if (!any_report_ || busy_since <= last_report_) return;
  const SteadyClock::duration idle = busy_since - last_report_;
  const double idle_us = Micros(idle);
  // target_ms >= 1 is validated, so target_us_ > 0 here.
  if (idle_us <= target_us_) return;
  estimate_us_ = -1;  // stale: the next batch seeds it
  // Half-life target_us_ over the idle time not yet accounted for.
  const double fresh_us = idle_us - Micros(idle_decayed_);
  if (fresh_us <= 0) return;
  wait_us_ = min_us_ + (wait_us_ - min_us_) * std::exp2(-fresh_us / target_us_);
  idle_decayed_ = idle;
}

std::chrono::microseconds BatchController::Wait(SteadyClock::time_point oldest_arrival) {
  std::lock_guard lock(mu_);
  if (!adaptive_) return std::chrono::microseconds(static_cast<int64_t>(fixed_us_));
  DecayLocked(oldest_arrival);
  return std::chrono::microseconds(static_cast<int64_t>(wait_us_));
}

void BatchController::Report(const BatchOutcome& o) {
  std::lock_guard lock(mu_);
  if (!adaptive_) return;
  // An idle spell before this batch's oldest item arrived makes the old
  // estimate stale (its own queue wait and service are not idle time).
  DecayLocked(o.done - o.service - o.queue_wait);

  const double sample_us = Micros(o.queue_wait) + Micros(o.service);
  estimate_us_ = estimate_us_ < 0 ? sample_us
                                  : estimate_us_ + kSampleWeight * (sample_us - estimate_us_);

  if (o.closed_full) wait_us_ = min_us_ + (wait_us_ - min_us_) * kFullShrink;
  const double error_us = target_us_ - estimate_us_;  // > 0: headroom
  if (error_us < 0 || !o.closed_full) wait_us_ += kGain * error_us;
  wait_us_ = std::clamp(wait_us_, min_us_, max_us_);

  // The cost cap (see the header). Full with fewer than max_batch_requests
  // items means it closed on cost.
  const double service_us = Micros(o.service);
  const bool closed_on_cost = o.closed_full && o.items < max_requests_;
  if (closed_on_cost && service_us > target_us_) {
    cap_ *= std::max(0.5, target_us_ / service_us);
  } else if (service_us < 0.5 * target_us_) {
    cap_ *= kCapGrowth;
  }
  cap_ = std::clamp(cap_, budget_ / kCapFloorDivisor, budget_);

  // Executors report out of order; idleness counts from the latest finish.
  if (!any_report_ || o.done > last_report_) {
    last_report_ = o.done;
    idle_decayed_ = {};
  }
  any_report_ = true;
}

}  // namespace shoal::worker
