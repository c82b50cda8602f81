#include "gateway/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace shoal::gateway {
namespace {

using Seconds = std::chrono::duration<double>;

std::chrono::seconds RoundUp(SteadyClock::duration wait) {
  const double s = std::ceil(std::chrono::duration_cast<Seconds>(wait).count());
  return std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(s)));
}

}  // namespace

TokenBucket::TokenBucket(double capacity, double per_second, SteadyClock::time_point now)
    : capacity_(capacity), per_second_(per_second), level_(capacity), last_(now) {}

SteadyClock::duration TokenBucket::WaitFor(double cost, SteadyClock::time_point now) {
  if (now > last_) {
    level_ = std::min(capacity_, level_ + Seconds(now - last_).count() * per_second_);
    last_ = now;
  }
  const double need = std::min(cost, capacity_);
  if (level_ >= need) return SteadyClock::duration::zero();
  return std::chrono::duration_cast<SteadyClock::duration>(Seconds((need - level_) / per_second_));
}

RateDecision RateLimiter::Admit(const queue::ApiKey& key, uint32_t tokens, SteadyClock::time_point now) {
  if (!key.limited()) return {};
  const std::string id(reinterpret_cast<const char*>(key.digest.data()), key.digest.size());
  std::lock_guard lock(mu_);
  Buckets& b = by_key_[id];
  if (b.rps != key.rps || b.tokens_per_min != key.tokens_per_min) {  // new, or its entry was rewritten
    b.rps = key.rps;
    b.tokens_per_min = key.tokens_per_min;
    b.requests.reset();
    b.tokens.reset();
    if (key.rps > 0) b.requests.emplace(key.rps, key.rps, now);
    if (key.tokens_per_min > 0) b.tokens.emplace(key.tokens_per_min, key.tokens_per_min / 60.0, now);
  }
  const auto request_wait = b.requests ? b.requests->WaitFor(1, now) : SteadyClock::duration::zero();
  const auto token_wait = b.tokens ? b.tokens->WaitFor(tokens, now) : SteadyClock::duration::zero();
  if (request_wait == SteadyClock::duration::zero() && token_wait == SteadyClock::duration::zero()) {
    if (b.requests) b.requests->Take(1);
    if (b.tokens) b.tokens->Take(tokens);
    return {};
  }
  RateDecision refused;
  refused.admitted = false;
  refused.retry_after = RoundUp(std::max(request_wait, token_wait));
  refused.reason = request_wait >= token_wait
                       ? "over its limit of " + std::to_string(key.rps) + " requests/s"
                       : "over its quota of " + std::to_string(key.tokens_per_min) + " tokens/min (this request: ~" +
                             std::to_string(tokens) + " tokens)";
  return refused;
}

}  // namespace shoal::gateway
