// Measuring a candidate around its knee, on synthetic curves: which levels
// are run, pruning at the reference load, the knee and the throughput held
// past it, the latency target.
#include "tune/measure.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shoal::tune {
namespace {

using loadtest::LevelResult;

// A closed-loop curve: throughput min(level, cap) * per, then `after` past
// the cap's level; p99 grows with the level.
struct Curve {
  double per = 50, cap = 16, after = -1;  // after < 0: flat past the cap
  double ms_per_level = 2;
  std::vector<double> run{};  // levels asked for, in order

  RunLevel Runner() {
    return [this](double level) -> Result<LevelResult> {
      run.push_back(level);
      LevelResult l;
      l.offered = level;
      l.throughput_rps = level <= cap ? level * per : after >= 0 ? after : cap * per;
      l.p99_ms = level * ms_per_level;
      l.ok = 1000;
      return l;
    };
  }
};

LadderOptions Options(double target_ms = 0) {
  LadderOptions o;
  o.knee.latency_target_ms = target_ms;
  o.knee.latency_factor = 0;
  return o;
}

TEST(TuneMeasure, TheBaselineClimbsFromTheBottomPastItsKnee) {
  Curve c;
  auto m = MeasureAroundKnee(c.Runner(), 0, 0, Options());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(c.run, (std::vector<double>{1, 2, 4, 8, 16, 32, 64})) << "two levels past the knee";
  EXPECT_EQ(m->knee_level, 16);
  EXPECT_DOUBLE_EQ(m->knee_rps, 800);
  EXPECT_DOUBLE_EQ(m->held_rps, 800);
  EXPECT_TRUE(m->feasible);
  EXPECT_FALSE(m->pruned);
}

TEST(TuneMeasure, ACandidateStartsAtTheReferenceAndHeldCountsACollapse) {
  Curve c{.per = 50, .cap = 16, .after = 320};
  auto m = MeasureAroundKnee(c.Runner(), 16, 0, Options());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(c.run.front(), 16);
  EXPECT_EQ(m->knee_level, 16);
  EXPECT_DOUBLE_EQ(m->knee_rps, 800);
  EXPECT_DOUBLE_EQ(m->held_rps, 320) << "what it keeps one level past the knee";
  EXPECT_DOUBLE_EQ(m->reference_rps, 800);
}

TEST(TuneMeasure, PrunesAfterTheProbeWhenClearlyWorse) {
  Curve c{.per = 25};
  auto m = MeasureAroundKnee(c.Runner(), 16, 0.8 * 800, Options());
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->pruned);
  EXPECT_EQ(c.run, (std::vector<double>{16}));
  EXPECT_DOUBLE_EQ(m->reference_rps, 400);
  EXPECT_NE(m->note.find("pruned"), std::string::npos);
}

TEST(TuneMeasure, GoesDownWhenTheReferenceIsOverTheLatencyTarget) {
  Curve c{.per = 50, .cap = 64, .ms_per_level = 5};  // p99 = 5 ms per connection
  auto m = MeasureAroundKnee(c.Runner(), 32, 0, Options(/*target_ms=*/50));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->knee_level, 8) << "the highest level within 50 ms";
  EXPECT_TRUE(m->feasible);
  EXPECT_LE(m->p99_at_knee_ms, 50);
  EXPECT_TRUE(std::find(c.run.begin(), c.run.end(), 8.0) != c.run.end());
}

TEST(TuneMeasure, InfeasibleWhenEvenOneConnectionMissesTheTarget) {
  Curve c{.ms_per_level = 100};
  auto m = MeasureAroundKnee(c.Runner(), 4, 0, Options(/*target_ms=*/50));
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->feasible);
  EXPECT_EQ(c.run.back(), 1) << "it went down to the lowest level";
}

TEST(TuneMeasure, TheLatencyTargetDoesNotStopTheClimb) {
  // Every level misses the target: the curve is still measured past its
  // throughput knee, which is then the reference for the candidates.
  Curve c{.ms_per_level = 100};
  auto m = MeasureAroundKnee(c.Runner(), 0, 0, Options(/*target_ms=*/50));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(c.run, (std::vector<double>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_FALSE(m->feasible);
  EXPECT_EQ(m->throughput_knee_level, 16);
}

TEST(TuneMeasure, StopsWhenOutOfTime) {
  Curve c;
  int levels = 0;
  auto m = MeasureAroundKnee(c.Runner(), 0, 0, Options(), [&] { return ++levels > 3; });
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kDeadlineExceeded);
  EXPECT_EQ(c.run.size(), 3u);
}

}  // namespace
}  // namespace shoal::tune
