// The bound a quantized variant (int8 or bf16 weights of the same model)
// must stay within of the version it was made from to be admitted: its
// golden outputs on the probe set (golden_agreement.h) and, where the id
// has evaluations attached, its scores on them. Why these numbers:
// docs/evaluations.md ("Quantized variants").
//
//   encode         mean cosine ≥ 0.995, min cosine ≥ 0.98, nearest-probe
//                  agreement ≥ 99 %
//   score          ordering agreement ≥ 99 %
//   extract        label / entity agreement ≥ 99 %
//   generate       greedy-text agreement ≥ 99 %
//   evaluations    each measure with a threshold (every measure, where the
//                  set has none) at least 99.5 % of the original's
//
// What `shoal models quantize` (CatalogAdmin::Quantize) records in the
// variant's promotion record, and what `shoal tune` checks before it
// offers a precision.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "admin/evaluation.h"
#include "admin/golden_agreement.h"
#include "catalog/precision_option.h"
#include "common/status.h"

namespace shoal::admin {

struct VariantBounds {
  double min_mean_cosine = 0.995;
  double min_cosine = 0.98;
  double min_agreement = 0.99;
  double max_eval_drop = 0.005;  // relative, per measure

  // {"min_mean_cosine": 0.999, ...}: the defaults above with the fields
  // given, which may only tighten them (a team with a stricter need asks
  // for it per variant); INVALID_INPUT for a field that loosens one or is
  // unknown.
  static Result<VariantBounds> Tightened(std::string_view json_object);
};

// One evaluation measure, the original's and the variant's.
struct EvalDelta {
  std::string evaluation, measure;
  double original = 0, variant = 0;
};

struct VariantGate {
  std::string precision;  // "int8", "bf16"
  uint32_t of = 0;        // the version it was made from (0: a tune's private check)
  bool passed = false;
  VariantBounds bounds;  // what it was judged by
  GoldenAgreement golden;
  std::vector<EvalDelta> evaluations;
  std::vector<std::string> failures;  // each bound it crossed, in words

  // {"precision", "of", "passed", "bounds", "golden", "evaluations", "failures"}
  std::string ToJson(std::string_view task) const;
  // passed, and failures (what Promote says when it refuses a variant).
  static Result<VariantGate> Parse(std::string_view json);
};

// Judges a variant. `golden`: CompareGolden(variant, original);
// `original`/`variant`: the reports of the same sets, by name (a set that
// did not run on both is a failure).
VariantGate JudgeVariant(std::string precision, uint32_t of, std::string_view task,
                         const GoldenAgreement& golden, const std::vector<EvalReport>& original,
                         const std::vector<EvalReport>& variant, const VariantBounds& bounds = {});

}  // namespace shoal::admin
