// How alike two versions answered one request: the serving version's
// answer and a shadow's (gateway/shadow_request.h), item by item, by the
// measures the probe comparison uses (admin/golden_agreement.h):
//
//   encode    one cosine per item and output (dense, sparse over the union
//             of indices, multivector as one flattened vector); an output
//             one side lacks, or of another length, is cosine 0
//   score     ranking: the pairs of items both order alike by logit (a
//             request of one item ranks nothing)
//   extract   labels: the items with the same best label, the same
//             entities (label, start, end), or the same lines
//
// Answers are the workers' MessagePack results (wire/item.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/task.h"
#include "common/status.h"

namespace shoal::gateway {

struct AnswerComparison {
  uint64_t vectors = 0;  // encode: the cosines taken
  double cosine_sum = 0;
  double min_cosine = 1;
  uint64_t judged = 0, agreed = 0;  // score: item pairs; extract: items

  void Add(const AnswerComparison& other);
  double mean_cosine() const { return vectors ? cosine_sum / static_cast<double>(vectors) : 1; }
  double agreement() const {
    return judged ? static_cast<double>(agreed) / static_cast<double>(judged) : 1;
  }
};

// INTERNAL when a result is not one the task gives (they come from
// workers), INVALID_INPUT when the two answers differ in their number of
// items; tokenize and generate are not compared (INVALID_INPUT).
Result<AnswerComparison> CompareAnswers(Task task, const std::vector<std::string_view>& serving,
                                        const std::vector<std::string_view>& candidate);

}  // namespace shoal::gateway
