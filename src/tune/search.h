// The tuning loop's search strategy, apart from any measurement: a
// coordinate search over a grid of parameter values, tested on synthetic
// objectives with known optima (tests/unit/tune_search_test.cc).
//
// From the start point (the profile's untuned parameters), it takes one
// dimension at a time, in the order given, and walks along it from the best
// point so far: for an ordered dimension, to lower values and then to higher
// ones, one grid step at a time, moving the best point whenever a value
// beats it and giving up on a direction after `patience` + 1 steps in a row
// that do not (patience lets it cross a plateau: batch caps of 64 and 32 may
// measure alike while 16 is far better); for a categorical dimension
// (precision), every value. A pass over every dimension that moves nothing
// ends the search; so does `max_passes`, or the evaluator saying the budget
// is spent. No point is evaluated twice.
//
// "Beats" is noise-aware: a feasible outcome beats an infeasible one; among
// feasible ones, a score must exceed the best by `min_improvement` (a
// fraction) to move the best point, so two measurements of one curve do not
// trade places on noise. The measurement decides what the score is (the
// tuner's: the knee throughput a candidate holds) and what feasible means
// (its p99 at the knee within the latency target); a pruned outcome (the
// tuner stopped measuring it early because it was clearly worse) never
// becomes the best.
//
// Threading: CoordinateSearch runs on the caller's thread and calls
// `evaluate` there, one point at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shoal::tune {

struct Dimension {
  std::string name;
  std::vector<double> values;  // the grid: ascending when ordered
  bool ordered = true;         // false: categorical, every value a neighbour
};

// An index into each dimension's values.
using Point = std::vector<size_t>;

struct Outcome {
  double score = 0;      // higher is better
  bool feasible = true;  // meets the constraints (the latency target)
  bool pruned = false;   // measured only partly: never the best
};

struct SearchOptions {
  double min_improvement = 0.03;
  int patience = 1;
  int max_passes = 3;
};

// Measures `point`; `best` is the best point so far (empty for the first
// call, the start), for a measurement that prunes against it. nullopt: the
// budget is spent; the search stops without this point.
using Evaluate = std::function<std::optional<Outcome>(const Point& point, const Point& best)>;

struct SearchStep {
  Point point;
  Outcome outcome;
  bool became_best = false;
};

struct SearchResult {
  Point best;  // the start when nothing beat it
  Outcome best_outcome;
  std::vector<SearchStep> steps;  // in evaluation order, the start first
  bool budget_spent = false;
};

// Whether `a` beats `b` (see above).
bool Beats(const Outcome& a, const Outcome& b, double min_improvement);

// The values of `point`, one per dimension.
std::vector<double> ValuesAt(const std::vector<Dimension>& dims, const Point& point);

// The index of the grid value nearest `value` (the start snapped to the grid).
size_t NearestIndex(const Dimension& dim, double value);

SearchResult CoordinateSearch(const std::vector<Dimension>& dims, const Point& start,
                              const Evaluate& evaluate, const SearchOptions& options = {});

}  // namespace shoal::tune
