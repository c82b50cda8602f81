// FindKnee on synthetic curves whose knees are known (loadtest/sweep.h).
#include <gtest/gtest.h>

#include "loadtest/sweep.h"

namespace shoal::loadtest {
namespace {

// A curve: offered levels, throughput and p99 per level (p50 = p99 / 2),
// no errors unless given.
std::vector<LevelResult> Curve(const std::vector<double>& offered,
                               const std::vector<double>& throughput,
                               const std::vector<double>& p99,
                               const std::vector<uint64_t>& errors = {}) {
  std::vector<LevelResult> levels;
  for (size_t i = 0; i < offered.size(); ++i) {
    LevelResult l;
    l.offered = offered[i];
    l.throughput_rps = throughput[i];
    l.p99_ms = p99[i];
    l.p95_ms = p99[i] * 0.8;
    l.p50_ms = p99[i] / 2;
    l.ok = 1000;
    l.errors = errors.empty() ? 0 : errors[i];
    levels.push_back(l);
  }
  return levels;
}

TEST(FindKnee, SaturatingCurve) {
  // Closed loop: throughput saturates at ~300/s from 4 connections; by
  // Little's law latency doubles with each doubling past it.
  const auto levels =
      Curve({1, 2, 4, 8, 16, 32}, {100, 200, 300, 310, 312, 313}, {10, 10, 13, 26, 51, 102});
  const Knee k = FindKnee(levels);
  EXPECT_TRUE(k.found);
  EXPECT_EQ(k.index, 2u);
  EXPECT_EQ(k.at.offered, 4);
  EXPECT_FALSE(k.reason.empty());
}

TEST(FindKnee, CurveThatFallsAfterAPeak) {
  const auto levels = Curve({100, 200, 400, 800, 1600}, {100, 200, 400, 320, 150}, {5, 5, 6, 7, 8});
  const Knee k = FindKnee(levels);
  EXPECT_TRUE(k.found);
  EXPECT_EQ(k.index, 2u);
  EXPECT_NE(k.reason.find("fell"), std::string::npos) << k.reason;
}

TEST(FindKnee, LatencyClimbsWhileThroughputCreepsUp) {
  // Throughput still gains more than 5% a level, but p99 passes 4x the
  // lowest (10 ms) at the fifth level: the knee is the level before.
  const auto levels =
      Curve({1, 2, 4, 8, 16, 32}, {100, 200, 300, 330, 360, 390}, {10, 10, 10, 30, 60, 120});
  const Knee k = FindKnee(levels);
  EXPECT_TRUE(k.found);
  EXPECT_EQ(k.index, 3u);
  EXPECT_NE(k.reason.find("lowest p99"), std::string::npos) << k.reason;
}

TEST(FindKnee, PlateauCreepDoesNotMoveTheKneeToItsEnd) {
  // Within 5% of the best from the third level on: the knee is where the
  // plateau starts, not where the last percent was squeezed out.
  const auto levels = Curve({1, 2, 4, 8, 16}, {100, 200, 300, 305, 310}, {10, 10, 12, 14, 16});
  const Knee k = FindKnee(levels);
  EXPECT_TRUE(k.found);
  EXPECT_EQ(k.index, 2u);
  EXPECT_NE(k.reason.find("gained"), std::string::npos) << k.reason;
}

TEST(FindKnee, LatencyTarget) {
  const auto levels =
      Curve({1, 2, 4, 8, 16, 32}, {100, 200, 300, 330, 360, 390}, {10, 10, 10, 30, 60, 120});
  KneeCriteria c;
  c.latency_target_ms = 25;
  const Knee k = FindKnee(levels, c);
  EXPECT_TRUE(k.found);
  EXPECT_EQ(k.index, 2u);
  EXPECT_NE(k.reason.find("target"), std::string::npos) << k.reason;
}

TEST(FindKnee, Errors) {
  // Throughput keeps rising, but the fourth level fails 5% of its requests.
  const auto levels =
      Curve({10, 20, 40, 80, 160}, {10, 20, 40, 75, 140}, {5, 5, 5, 6, 6}, {0, 0, 0, 50, 400});
  const Knee k = FindKnee(levels);
  EXPECT_TRUE(k.found);
  EXPECT_EQ(k.index, 2u);
  EXPECT_NE(k.reason.find("errors"), std::string::npos) << k.reason;
}

TEST(FindKnee, AnErrorBlipBelowTheKneeIsNotTheKnee) {
  // One level with a few errors, then the curve rises again: still rising.
  const auto levels = Curve({1, 2, 4, 8}, {100, 200, 400, 800}, {5, 5, 5, 5}, {0, 30, 0, 0});
  const Knee k = FindKnee(levels);
  EXPECT_FALSE(k.found);
  EXPECT_EQ(k.index, 3u);
}

TEST(FindKnee, StillRisingIsNotFound) {
  const auto levels = Curve({1, 2, 4, 8}, {100, 200, 400, 800}, {5, 5, 5, 6});
  const Knee k = FindKnee(levels);
  EXPECT_FALSE(k.found);
  EXPECT_EQ(k.index, 3u);
  EXPECT_EQ(k.at.offered, 8);
}

TEST(FindKnee, ANoisyDipThenRisingIsNotFound) {
  const auto levels = Curve({1, 2, 4, 8, 16}, {100, 200, 190, 400, 800}, {5, 5, 5, 5, 5});
  EXPECT_FALSE(FindKnee(levels).found);
}

TEST(FindKnee, EmptyAndOneLevel) {
  const Knee none = FindKnee({});
  EXPECT_FALSE(none.found);
  EXPECT_EQ(none.index, 0u);

  const Knee one = FindKnee(Curve({4}, {100}, {5}));
  EXPECT_FALSE(one.found);
  EXPECT_EQ(one.index, 0u);
  EXPECT_EQ(one.at.offered, 4);
}

TEST(FindKnee, NoLevelWithinTheCriteria) {
  // Every request fails (a wrong key, a dead model): the curve had turned
  // before the lowest level.
  auto levels = Curve({1, 2, 4}, {0, 0, 0}, {0, 0, 0}, {100, 200, 400});
  for (auto& l : levels) l.ok = 0;
  const Knee k = FindKnee(levels);
  EXPECT_TRUE(k.found);
  EXPECT_EQ(k.index, 0u);
  EXPECT_NE(k.reason.find("no level"), std::string::npos) << k.reason;
}

TEST(FindKnee, OutsideCriteriaSaysWhy) {
  const auto levels = Curve({1, 2, 4}, {100, 200, 210}, {10, 10, 50}, {0, 0, 1});
  EXPECT_EQ(OutsideCriteria(levels, 0), "");
  EXPECT_EQ(OutsideCriteria(levels, 1), "");
  EXPECT_NE(OutsideCriteria(levels, 2).find("lowest p99"), std::string::npos);
}

}  // namespace
}  // namespace shoal::loadtest
