// The measures evaluations report (docs/evaluations.md), as the usual
// definitions give them: pure functions of ranks, scores and labels.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::admin {

// nDCG@k of one ranking (binary relevance): `relevant[i]` for the i-th
// result, best first; `total_relevant` of the query in all. 0 without any.
double NdcgAtK(const std::vector<bool>& relevant, size_t total_relevant, size_t k);
// The share of the query's relevant items in the first k.
double RecallAtK(const std::vector<bool>& relevant, size_t total_relevant, size_t k);
// 1/rank of the first relevant result within k, else 0.
double ReciprocalRankAtK(const std::vector<bool>& relevant, size_t k);
// Spearman's rank correlation, ties given their mean rank (0 when either
// side is constant).
double Spearman(const std::vector<double>& x, const std::vector<double>& y);
// Macro-averaged F1 over the labels of `gold` and `predicted`.
double MacroF1(const std::vector<std::string>& gold, const std::vector<std::string>& predicted);
// ROUGE-L F1 of two texts, over whitespace-separated words.
double RougeL(std::string_view candidate, std::string_view reference);

// Precision, recall and F1 from counts (0 where undefined).
struct PrecisionRecall {
  double precision = 0, recall = 0, f1 = 0;
};
PrecisionRecall FromCounts(size_t true_positives, size_t predicted, size_t gold);

}  // namespace shoal::admin
