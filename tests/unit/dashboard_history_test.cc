// The dashboard's history ring: per-interval rates and percentiles from the
// counts recorded between two samples, and the ring's wrap-around.
#include "gateway/dashboard_history.h"

#include <gtest/gtest.h>

namespace shoal::gateway {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(DashboardHistory, RatesAndPercentilesAreThoseOfTheIntervalAlone) {
  const auto t0 = SteadyClock::time_point{} + seconds(100);
  DashboardHistory h(10, t0);

  // Interval 1 (2 s): 100 fast responses, 1 ms each; 4 of them 503s and 2 404s.
  for (int i = 0; i < 100; ++i) h.Record(i < 4 ? 503 : i < 6 ? 404 : 200, 0.001);
  h.Sample(t0 + seconds(2), 1000, 3);
  // Interval 2 (4 s): 10 slow responses of 100 ms: the fast ones of before
  // must not pull its percentiles down.
  for (int i = 0; i < 10; ++i) h.Record(200, 0.100);
  h.Sample(t0 + seconds(6), 5000, 0);
  // Interval 3: nothing.
  h.Sample(t0 + seconds(8), 7000, 0);

  const auto s = h.Samples();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].unix_ms, 1000);
  EXPECT_DOUBLE_EQ(s[0].seconds, 2);
  EXPECT_EQ(s[0].responses, 100u);
  EXPECT_DOUBLE_EQ(s[0].per_second(s[0].responses), 50);
  EXPECT_EQ(s[0].errors, 4u);
  EXPECT_EQ(s[0].client_errors, 2u);
  EXPECT_EQ(s[0].in_flight, 3u);
  // Within the 15 % bucket that holds 1 ms.
  ASSERT_TRUE(s[0].p50_seconds && s[0].p99_seconds);
  EXPECT_NEAR(*s[0].p50_seconds, 0.001, 0.00015);
  EXPECT_NEAR(*s[0].p99_seconds, 0.001, 0.00015);

  EXPECT_EQ(s[1].responses, 10u);
  EXPECT_DOUBLE_EQ(s[1].per_second(s[1].responses), 2.5);
  EXPECT_EQ(s[1].errors, 0u);
  ASSERT_TRUE(s[1].p50_seconds && s[1].p99_seconds);
  EXPECT_NEAR(*s[1].p50_seconds, 0.100, 0.015);
  EXPECT_NEAR(*s[1].p99_seconds, 0.100, 0.015);

  EXPECT_EQ(s[2].responses, 0u);
  EXPECT_FALSE(s[2].p50_seconds.has_value()) << "no responses: no latency, not zero";

  EXPECT_EQ(h.total_responses(), 110u);
  EXPECT_EQ(h.total_errors(), 4u);

  const auto json = h.ToJson();
  ASSERT_EQ(json["samples"].size(), 3u);
  EXPECT_DOUBLE_EQ(json["samples"][0]["rps"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(json["samples"][0]["errors_per_s"].get<double>(), 2);
  EXPECT_NEAR(json["samples"][1]["p99_ms"].get<double>(), 100, 15);
  EXPECT_TRUE(json["samples"][2]["p50_ms"].is_null());
  EXPECT_EQ(json["responses_total"], 110);
}

TEST(DashboardHistory, PercentilesSeparateAFastMajorityFromASlowTail) {
  const auto t0 = SteadyClock::time_point{};
  DashboardHistory h(4, t0);
  for (int i = 0; i < 980; ++i) h.Record(200, 0.002);
  for (int i = 0; i < 20; ++i) h.Record(200, 0.500);
  h.Sample(t0 + seconds(1), 0, 0);
  const auto s = h.Samples().at(0);
  EXPECT_NEAR(*s.p50_seconds, 0.002, 0.0003);
  // The 990th of 1000 is among the slow 20.
  EXPECT_NEAR(*s.p99_seconds, 0.500, 0.075);
}

TEST(DashboardHistory, TheRingKeepsTheNewestInOrder) {
  const auto t0 = SteadyClock::time_point{};
  DashboardHistory h(3, t0);
  for (int i = 1; i <= 7; ++i) {
    for (int k = 0; k < i; ++k) h.Record(200, 0.01);
    h.Sample(t0 + seconds(i), i * 1000, 0);
  }
  const auto s = h.Samples();
  ASSERT_EQ(s.size(), 3u);
  // Samples 5, 6, 7, oldest first, each with its own interval's count.
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(s[j].unix_ms, (5 + j) * 1000);
    EXPECT_EQ(s[j].responses, static_cast<uint64_t>(5 + j));
    EXPECT_DOUBLE_EQ(s[j].seconds, 1);
  }
  EXPECT_EQ(h.total_responses(), 28u);
}

TEST(DashboardHistory, AnIntervalOfNoLengthIsDropped) {
  const auto t0 = SteadyClock::time_point{};
  DashboardHistory h(3, t0);
  h.Record(200, 0.01);
  h.Sample(t0, 0, 0);
  EXPECT_TRUE(h.Samples().empty());
  // The response is not lost: it counts in the next interval.
  h.Sample(t0 + milliseconds(500), 500, 0);
  ASSERT_EQ(h.Samples().size(), 1u);
  EXPECT_EQ(h.Samples()[0].responses, 1u);
  EXPECT_DOUBLE_EQ(h.Samples()[0].per_second(1), 2);
}

TEST(DashboardHistory, QuantileInterpolatesWithinABucket) {
  const std::vector<double> bounds = {1, 2, 4};
  // 10 in (0,1], 10 in (1,2], none in (2,4], 0 above.
  const std::vector<uint64_t> counts = {10, 10, 0, 0};
  EXPECT_DOUBLE_EQ(*DashboardHistory::Quantile(bounds, counts, 0.25), 0.5);
  EXPECT_DOUBLE_EQ(*DashboardHistory::Quantile(bounds, counts, 0.5), 1.0);
  EXPECT_DOUBLE_EQ(*DashboardHistory::Quantile(bounds, counts, 0.75), 1.5);
  EXPECT_DOUBLE_EQ(*DashboardHistory::Quantile(bounds, counts, 1.0), 2.0);
  // Above the last bound reads as the last bound.
  EXPECT_DOUBLE_EQ(*DashboardHistory::Quantile(bounds, {0, 0, 0, 5}, 0.5), 4.0);
  EXPECT_FALSE(DashboardHistory::Quantile(bounds, {0, 0, 0, 0}, 0.5).has_value());
}

}  // namespace
}  // namespace shoal::gateway
