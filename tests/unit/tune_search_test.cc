// The tuning loop's coordinate search on synthetic objectives whose optimum
// is known: it must find it, within few evaluations, never evaluating a
// point twice, and stop when the budget says so.
#include "tune/search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace shoal::tune {
namespace {

Dimension Pow2(const std::string& name, int lo, int hi) {
  Dimension d{name, {}, true};
  for (int v = lo; v <= hi; v *= 2) d.values.push_back(v);
  return d;
}

// Counts evaluations and checks none repeats.
struct Recorder {
  std::set<Point> seen;
  int repeats = 0;
  Evaluate Wrap(std::function<Outcome(const std::vector<double>&)> f,
                const std::vector<Dimension>& dims, int budget = 1000) {
    return [this, f, &dims, budget](const Point& p, const Point&) -> std::optional<Outcome> {
      if (static_cast<int>(seen.size()) >= budget) return std::nullopt;
      if (!seen.insert(p).second) ++repeats;
      return f(ValuesAt(dims, p));
    };
  }
};

TEST(TuneSearch, FindsTheOptimumOfASeparableConcaveObjective) {
  const std::vector<Dimension> dims = {
      Pow2("requests", 1, 512), Pow2("tokens", 512, 65536), {"wait", {0, 1, 2, 5, 10, 20}, true}};
  // Peaks at requests 16, tokens 4096, wait 2, in log space.
  auto f = [](const std::vector<double>& v) {
    const double a = std::log2(v[0]) - 4, b = std::log2(v[1]) - 12, c = v[2] - 2;
    return Outcome{1000 - 40 * a * a - 30 * b * b - 50 * c * c};
  };
  Recorder r;
  const Point start = {NearestIndex(dims[0], 64), NearestIndex(dims[1], 16384),
                       NearestIndex(dims[2], 0)};
  auto result = CoordinateSearch(dims, start, r.Wrap(f, dims));
  EXPECT_EQ(ValuesAt(dims, result.best), (std::vector<double>{16, 4096, 2}));
  EXPECT_EQ(r.repeats, 0);
  EXPECT_LT(r.seen.size(), 10u * 8u * 6u / 10u) << "far fewer than the whole grid";
  EXPECT_FALSE(result.budget_spent);
  EXPECT_EQ(result.steps.front().point, start);
}

TEST(TuneSearch, CrossesAPlateauWithPatience) {
  // The identity runtime's known optimum: 32 and 64 score alike, 16 is best.
  const std::vector<Dimension> dims = {Pow2("requests", 1, 512)};
  auto f = [](const std::vector<double>& v) {
    const double b = v[0];
    if (b <= 16) return Outcome{50 * b};
    if (b <= 64) return Outcome{320};
    return Outcome{320 * 64 / b};
  };
  Recorder r;
  auto found = CoordinateSearch(dims, {NearestIndex(dims[0], 64)}, r.Wrap(f, dims));
  EXPECT_EQ(ValuesAt(dims, found.best)[0], 16);

  Recorder impatient;
  auto stuck = CoordinateSearch(dims, {NearestIndex(dims[0], 64)}, impatient.Wrap(f, dims),
                                SearchOptions{.patience = 0});
  EXPECT_EQ(ValuesAt(dims, stuck.best)[0], 64) << "without patience the plateau stops it";
}

TEST(TuneSearch, NoiseBelowTheMinimumImprovementDoesNotMoveTheBest) {
  const std::vector<Dimension> dims = {Pow2("requests", 1, 64)};
  auto f = [](const std::vector<double>& v) {
    return Outcome{v[0] == 8 ? 100.0 : 102.0};
  };  // 2 % "better"
  Recorder r;
  auto result = CoordinateSearch(dims, {NearestIndex(dims[0], 8)}, r.Wrap(f, dims),
                                 {.min_improvement = 0.03});
  EXPECT_EQ(ValuesAt(dims, result.best)[0], 8);
}

TEST(TuneSearch, TriesEveryValueOfACategoricalDimension) {
  const std::vector<Dimension> dims = {{"precision", {0, 1, 2}, false}, Pow2("threads", 1, 2)};
  auto f = [](const std::vector<double>& v) { return Outcome{v[0] == 2 ? 200.0 : 100.0 + v[1]}; };
  Recorder r;
  auto result = CoordinateSearch(dims, {0, 1}, r.Wrap(f, dims));
  EXPECT_EQ(ValuesAt(dims, result.best)[0], 2);
  EXPECT_EQ(r.repeats, 0);
}

TEST(TuneSearch, InfeasiblePointsNeverWinAndAFeasibleOneBeatsAnInfeasibleStart) {
  // Throughput grows with the batch, but batches over 32 miss the latency target.
  const std::vector<Dimension> dims = {Pow2("requests", 1, 512)};
  auto f = [](const std::vector<double>& v) { return Outcome{v[0], v[0] <= 32}; };
  Recorder r;
  auto result = CoordinateSearch(dims, {NearestIndex(dims[0], 128)}, r.Wrap(f, dims));
  EXPECT_EQ(ValuesAt(dims, result.best)[0], 32);
  EXPECT_TRUE(result.best_outcome.feasible);
}

TEST(TuneSearch, PrunedOutcomesNeverBecomeTheBest) {
  const std::vector<Dimension> dims = {Pow2("requests", 1, 8)};
  auto f = [](const std::vector<double>& v) { return Outcome{v[0] * 10, true, v[0] == 8}; };
  Recorder r;
  auto result = CoordinateSearch(dims, {NearestIndex(dims[0], 4)}, r.Wrap(f, dims));
  EXPECT_EQ(ValuesAt(dims, result.best)[0], 4);
}

TEST(TuneSearch, StopsWhenTheBudgetIsSpent) {
  const std::vector<Dimension> dims = {Pow2("requests", 1, 512), Pow2("tokens", 512, 65536)};
  auto f = [](const std::vector<double>& v) { return Outcome{-std::abs(std::log2(v[0]) - 2)}; };
  Recorder r;
  auto result = CoordinateSearch(dims, {9, 0}, r.Wrap(f, dims, /*budget=*/4));
  EXPECT_TRUE(result.budget_spent);
  EXPECT_EQ(r.seen.size(), 4u);
  EXPECT_EQ(result.steps.size(), 4u);
  EXPECT_EQ(ValuesAt(dims, result.best)[0], 64) << "the best of the four it measured";
}

}  // namespace
}  // namespace shoal::tune
