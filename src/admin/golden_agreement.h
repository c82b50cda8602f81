// How closely two versions answer the probe set (probes.h): their golden
// outputs compared, probe by probe — what a new version, a quantized
// variant or a canary is judged by against the version that serves.
//
//   encode    dense vectors: cosine per probe (mean, min); agreement: the
//             share of probes whose nearest other probe is the same in both
//   score     logits: the largest difference; agreement: the share of the
//             probe pairs' orderings (by logit) both keep
//   extract   agreement: the share of probes with the same best label, or
//             the same entities (label, start, end), or the same lines
//   generate  agreement: the share of prompts with the same greedy text
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace shoal::admin {

struct GoldenAgreement {
  size_t probes = 0;
  double mean_cosine = 1, min_cosine = 1;  // encode
  double max_abs_diff = 0;                 // score
  double agreement = 1;                    // every task, 0 to 1
  std::string ToJson(std::string_view task) const;
};

// INVALID_INPUT when the two are not comparable: other probe sets or
// tasks, other dimensions, outputs missing.
Result<GoldenAgreement> CompareGolden(std::string_view a_json, std::string_view b_json);

// The pairs (i, j) that `a` and `b` order alike, of all pairs: (kept, all).
std::pair<size_t, size_t> KeptOrderings(std::span<const double> a, std::span<const double> b);

// What an extract or generate answer is compared by: its best label, its
// entities (label, start, end), its lines' texts, or its text — here and
// in the gateway's shadow comparison (gateway/answer_comparison.h).
nlohmann::json ComparedAnswer(const nlohmann::json& output);

}  // namespace shoal::admin
