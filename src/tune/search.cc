#include "tune/search.h"

#include <cmath>
#include <map>

namespace shoal::tune {

bool Beats(const Outcome& a, const Outcome& b, double min_improvement) {
  if (a.pruned) return false;
  if (a.feasible != b.feasible) return a.feasible;
  return a.score > b.score + std::abs(b.score) * min_improvement;
}

std::vector<double> ValuesAt(const std::vector<Dimension>& dims, const Point& point) {
  std::vector<double> v;
  for (size_t d = 0; d < dims.size() && d < point.size(); ++d)
    v.push_back(dims[d].values[point[d]]);
  return v;
}

size_t NearestIndex(const Dimension& dim, double value) {
  size_t best = 0;
  for (size_t i = 1; i < dim.values.size(); ++i) {
    if (std::abs(dim.values[i] - value) < std::abs(dim.values[best] - value)) best = i;
  }
  return best;
}

namespace {

class Searcher {
 public:
  Searcher(const std::vector<Dimension>& dims, const Evaluate& evaluate,
           const SearchOptions& options)
      : dims_(dims), evaluate_(evaluate), options_(options) {}

  // Evaluates `p` unless it was; false when the budget is spent.
  bool Try(const Point& p, const Outcome** outcome) {
    if (auto it = seen_.find(p); it != seen_.end()) {
      *outcome = &it->second;
      return true;
    }
    auto o = evaluate_(p, result_.best);
    if (!o) {
      result_.budget_spent = true;
      return false;
    }
    SearchStep step{p, *o, false};
    if (!have_best_ || (!o->pruned && Beats(*o, result_.best_outcome, options_.min_improvement))) {
      // The start is the best until something beats it, even when pruned
      // or infeasible (it is the baseline).
      have_best_ = true;
      result_.best = p;
      result_.best_outcome = *o;
      step.became_best = true;
    }
    result_.steps.push_back(step);
    *outcome = &seen_.emplace(p, *o).first->second;
    return true;
  }

  // One dimension from the best point; false when the budget is spent.
  bool Line(size_t d) {
    const Dimension& dim = dims_[d];
    const Outcome* o = nullptr;
    if (!dim.ordered) {
      const Point center = result_.best;
      for (size_t i = 0; i < dim.values.size(); ++i) {
        Point p = center;
        p[d] = i;
        if (!Try(p, &o)) return false;
      }
      return true;
    }
    for (int dir : {-1, +1}) {
      int misses = 0;
      Point p = result_.best;
      for (;;) {
        const long next = static_cast<long>(p[d]) + dir;
        if (next < 0 || next >= static_cast<long>(dim.values.size())) break;
        p[d] = static_cast<size_t>(next);
        const Point before = result_.best;
        if (!Try(p, &o)) return false;
        if (result_.best != before || p == result_.best) {
          misses = 0;
        } else if (++misses > options_.patience) {
          break;
        }
      }
    }
    return true;
  }

  SearchResult Run(const Point& start) {
    const Outcome* o = nullptr;
    if (!Try(start, &o)) return result_;
    for (int pass = 0; pass < options_.max_passes; ++pass) {
      const Point before = result_.best;
      for (size_t d = 0; d < dims_.size(); ++d) {
        if (dims_[d].values.size() < 2) continue;
        if (!Line(d)) return result_;
      }
      if (result_.best == before) break;
    }
    return result_;
  }

 private:
  const std::vector<Dimension>& dims_;
  const Evaluate& evaluate_;
  const SearchOptions& options_;
  std::map<Point, Outcome> seen_;
  bool have_best_ = false;
  SearchResult result_;
};

}  // namespace

SearchResult CoordinateSearch(const std::vector<Dimension>& dims, const Point& start,
                              const Evaluate& evaluate, const SearchOptions& options) {
  return Searcher(dims, evaluate, options).Run(start);
}

}  // namespace shoal::tune
