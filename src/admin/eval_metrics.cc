#include "admin/eval_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

namespace shoal::admin {
namespace {

// Ranks from 1, ties the mean of the ranks they span.
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t t = i; t <= j; ++t) ranks[order[t]] = mean;
    i = j + 1;
  }
  return ranks;
}

std::vector<std::string> Words(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(std::move(w));
  return words;
}

}  // namespace

double NdcgAtK(const std::vector<bool>& relevant, size_t total_relevant, size_t k) {
  double dcg = 0, ideal = 0;
  for (size_t i = 0; i < std::min(k, relevant.size()); ++i) {
    if (relevant[i]) dcg += 1 / std::log2(static_cast<double>(i) + 2);
  }
  for (size_t i = 0; i < std::min(k, total_relevant); ++i)
    ideal += 1 / std::log2(static_cast<double>(i) + 2);
  return ideal > 0 ? dcg / ideal : 0;
}

double RecallAtK(const std::vector<bool>& relevant, size_t total_relevant, size_t k) {
  if (total_relevant == 0) return 0;
  const size_t found = static_cast<size_t>(std::count(
      relevant.begin(),
      relevant.begin() + static_cast<std::ptrdiff_t>(std::min(k, relevant.size())), true));
  return static_cast<double>(found) / static_cast<double>(total_relevant);
}

double ReciprocalRankAtK(const std::vector<bool>& relevant, size_t k) {
  for (size_t i = 0; i < std::min(k, relevant.size()); ++i) {
    if (relevant[i]) return 1 / static_cast<double>(i + 1);
  }
  return 0;
}

double Spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return 0;
  const std::vector<double> rx = Ranks(x), ry = Ranks(y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n,
               my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

PrecisionRecall FromCounts(size_t true_positives, size_t predicted, size_t gold) {
  PrecisionRecall r;
  r.precision =
      predicted ? static_cast<double>(true_positives) / static_cast<double>(predicted) : 0;
  r.recall = gold ? static_cast<double>(true_positives) / static_cast<double>(gold) : 0;
  r.f1 = r.precision + r.recall > 0 ? 2 * r.precision * r.recall / (r.precision + r.recall) : 0;
  return r;
}

double MacroF1(const std::vector<std::string>& gold, const std::vector<std::string>& predicted) {
  std::set<std::string> labels(gold.begin(), gold.end());
  labels.insert(predicted.begin(), predicted.end());
  if (labels.empty() || gold.size() != predicted.size()) return 0;
  double sum = 0;
  for (const std::string& label : labels) {
    size_t tp = 0, p = 0, g = 0;
    for (size_t i = 0; i < gold.size(); ++i) {
      tp += gold[i] == label && predicted[i] == label;
      p += predicted[i] == label;
      g += gold[i] == label;
    }
    sum += FromCounts(tp, p, g).f1;
  }
  return sum / static_cast<double>(labels.size());
}

double RougeL(std::string_view candidate, std::string_view reference) {
  const std::vector<std::string> c = Words(candidate), r = Words(reference);
  if (c.empty() || r.empty()) return 0;
  std::vector<size_t> prev(r.size() + 1, 0), row(r.size() + 1, 0);
  for (size_t i = 1; i <= c.size(); ++i) {
    for (size_t j = 1; j <= r.size(); ++j) {
      row[j] = c[i - 1] == r[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], row[j - 1]);
    }
    std::swap(prev, row);
  }
  return FromCounts(prev[r.size()], c.size(), r.size()).f1;
}

}  // namespace shoal::admin
