// Token buckets and per-key limits, on an explicit clock.
#include "gateway/rate_limiter.h"

#include <gtest/gtest.h>

namespace shoal::gateway {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const SteadyClock::time_point t0 = SteadyClock::time_point() + std::chrono::hours(1);

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(TokenBucket, StartsFullAndAllowsABurstOfItsCapacity) {
  TokenBucket b(5, 5, t0);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(b.WaitFor(1, t0), SteadyClock::duration::zero()) << i;
    b.Take(1);
  }
  EXPECT_NEAR(Seconds(b.WaitFor(1, t0)), 0.2, 1e-9) << "one token refills in 1/5 s";
}

TEST(TokenBucket, RefillsAtItsRateUpToItsCapacity) {
  TokenBucket b(10, 2, t0);
  b.Take(10);
  EXPECT_NEAR(Seconds(b.WaitFor(3, t0)), 1.5, 1e-9);
  EXPECT_EQ(b.WaitFor(3, t0 + milliseconds(1500)), SteadyClock::duration::zero());
  EXPECT_NEAR(b.level(), 3, 1e-9);
  // A long pause fills it to the capacity, no further.
  b.WaitFor(1, t0 + std::chrono::hours(1));
  EXPECT_NEAR(b.level(), 10, 1e-9);
}

TEST(TokenBucket, ACostOverTheCapacityNeedsAFullBucketAndLeavesDebt) {
  TokenBucket b(60, 1, t0);  // 60 tokens a minute
  ASSERT_EQ(b.WaitFor(100, t0), SteadyClock::duration::zero()) << "never admissible otherwise";
  b.Take(100);
  EXPECT_NEAR(b.level(), -40, 1e-9);
  EXPECT_NEAR(Seconds(b.WaitFor(1, t0)), 41, 1e-9) << "the debt is waited out";
  EXPECT_NEAR(Seconds(b.WaitFor(100, t0)), 100, 1e-9) << "back to full: 40 s of debt + 60 s";
}

TEST(TokenBucket, TimeGoingBackwardsChangesNothing) {
  TokenBucket b(4, 4, t0);
  b.Take(4);
  EXPECT_NEAR(Seconds(b.WaitFor(1, t0 - seconds(10))), 0.25, 1e-9);
}

queue::ApiKey Key(uint32_t rps, uint32_t tokens_per_min, unsigned char id = 1) {
  queue::ApiKey k;
  k.name = "k" + std::to_string(id);
  k.digest.fill(id);
  k.rps = rps;
  k.tokens_per_min = tokens_per_min;
  return k;
}

TEST(RateLimiter, RequestsPerSecondWithRetryAfterRoundedUp) {
  RateLimiter limiter;
  const auto key = Key(2, 0);
  EXPECT_TRUE(limiter.Admit(key, 10, t0).admitted);
  EXPECT_TRUE(limiter.Admit(key, 10, t0).admitted);
  RateDecision third = limiter.Admit(key, 10, t0);
  EXPECT_FALSE(third.admitted);
  EXPECT_EQ(third.retry_after, seconds(1)) << "0.5 s, rounded up";
  EXPECT_NE(third.reason.find("2 requests/s"), std::string::npos) << third.reason;
  EXPECT_FALSE(limiter.Admit(key, 10, t0 + milliseconds(400)).admitted);
  EXPECT_TRUE(limiter.Admit(key, 10, t0 + milliseconds(500)).admitted);
}

TEST(RateLimiter, TokensPerMinuteWithTheWaitFromTheBucket) {
  RateLimiter limiter;
  const auto key = Key(0, 600);  // 10 tokens a second
  EXPECT_TRUE(limiter.Admit(key, 500, t0).admitted);
  RateDecision next = limiter.Admit(key, 450, t0);  // 100 left: 350 missing, 35 s
  EXPECT_FALSE(next.admitted);
  EXPECT_EQ(next.retry_after, seconds(35));
  EXPECT_NE(next.reason.find("600 tokens/min"), std::string::npos) << next.reason;
  EXPECT_FALSE(limiter.Admit(key, 450, t0 + seconds(34)).admitted);
  EXPECT_TRUE(limiter.Admit(key, 450, t0 + seconds(35)).admitted);
}

TEST(RateLimiter, ARefusedRequestIsNotCharged) {
  RateLimiter limiter;
  const auto key = Key(1, 60);  // 1 request/s, 1 token/s
  ASSERT_TRUE(limiter.Admit(key, 30, t0).admitted);
  // Refused by the request bucket: the tokens stay (30 left)...
  ASSERT_FALSE(limiter.Admit(key, 30, t0).admitted);
  // ...so one second later both can pay.
  EXPECT_TRUE(limiter.Admit(key, 30, t0 + seconds(1)).admitted);
  // Refused by the token bucket (2 left, 30 needed): the request is not
  // charged either, and the wait is the token bucket's.
  RateDecision r = limiter.Admit(key, 30, t0 + seconds(2));
  EXPECT_FALSE(r.admitted);
  EXPECT_EQ(r.retry_after, seconds(28));
  EXPECT_TRUE(limiter.Admit(key, 0, t0 + seconds(2)).admitted) << "the request bucket was not charged";
}

TEST(RateLimiter, KeysAreLimitedApartAndUnlimitedKeysAlwaysPass) {
  RateLimiter limiter;
  const auto a = Key(1, 0, 1), b = Key(1, 0, 2), free = Key(0, 0, 3);
  EXPECT_TRUE(limiter.Admit(a, 1, t0).admitted);
  EXPECT_FALSE(limiter.Admit(a, 1, t0).admitted);
  EXPECT_TRUE(limiter.Admit(b, 1, t0).admitted);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limiter.Admit(free, 1'000'000, t0).admitted);
}

TEST(RateLimiter, NewLimitsForTheSameKeyTakeEffect) {
  RateLimiter limiter;
  auto key = Key(1, 0);
  EXPECT_TRUE(limiter.Admit(key, 1, t0).admitted);
  EXPECT_FALSE(limiter.Admit(key, 1, t0).admitted);
  key.rps = 5;
  EXPECT_TRUE(limiter.Admit(key, 1, t0).admitted);
}

}  // namespace
}  // namespace shoal::gateway
