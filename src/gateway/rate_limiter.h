// Rate limits and quotas per API key: requests per second and estimated
// tokens per minute (queue/keys.h), each a token bucket.
//
// A key's `rps` is a bucket of `rps` requests refilled at `rps` per second
// (so a burst of one second's worth, then a steady rate); its
// `tokens_per_min` a bucket of that many tokens refilled at a sixtieth of it
// per second. A request costs one request and its cost estimate in tokens —
// what the router puts on its work items before any tokenizer has seen them
// (about four bytes of text per token; a generation's prompt plus its
// max_tokens). It is admitted only when both buckets can pay; a refused
// request is not charged, and its 429 says when both could (Retry-After).
//
// Limits are per gateway process: the buckets live in this process, shared
// by its lanes (one lock; a connection stays on one lane, so per-lane
// buckets would hold a client to a fraction of its limit). With N gateways
// behind a balancer a key may reach up to N times its limits.
//
// Threading: RateLimiter is thread-safe (`mu_`); TokenBucket is a value,
// used under its owner's lock.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "queue/keys.h"

namespace shoal::gateway {

// Holds up to `capacity` tokens, refilled continuously at `per_second`;
// starts full.
class TokenBucket {
 public:
  TokenBucket(double capacity, double per_second, SteadyClock::time_point now);

  // How long until `cost` can be taken (zero: now). A cost over the capacity
  // needs a full bucket only — it could never be had otherwise — and leaves
  // the bucket in debt, which later requests wait out.
  SteadyClock::duration WaitFor(double cost, SteadyClock::time_point now);
  // Takes `cost`, after WaitFor(cost, now) said zero.
  void Take(double cost) { level_ -= cost; }
  double level() const { return level_; }

 private:
  double capacity_;
  double per_second_;
  double level_;
  SteadyClock::time_point last_;  // when level_ was last refilled
};

struct RateDecision {
  bool admitted = true;
  std::chrono::seconds retry_after{0};  // refused: whole seconds, rounded up, at least 1
  std::string reason;                   // refused: which limit, for the error message
};

class RateLimiter {
 public:
  // Charges `key` one request and `tokens`, or refuses and charges nothing.
  // A key without limits is always admitted (and never locks).
  RateDecision Admit(const queue::ApiKey& key, uint32_t tokens, SteadyClock::time_point now);

 private:
  struct Buckets {
    uint32_t rps = 0, tokens_per_min = 0;  // what the buckets were made for
    std::optional<TokenBucket> requests, tokens;
  };

  std::mutex mu_;
  // By key digest, so a key removed and made again under the same name
  // starts afresh. Entries of removed keys stay (a few dozen bytes each).
  std::unordered_map<std::string, Buckets> by_key_;  // guarded by mu_
};

}  // namespace shoal::gateway
