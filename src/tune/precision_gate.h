// Which precisions `shoal tune` may offer a model: each one other than f32
// judged against f32 on the probe set by the bound a quantized variant must
// meet (admin/variant_gate.h), the model loaded once per precision. A
// precision outside it is not searched, and the tuned entry's evidence says
// which were checked and how they stood.
//
// Only the probe set: the evaluations attached to a model live in a
// cluster's catalog, and tune runs on a private one (`shoal models
// quantize` judges a variant on both).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "catalog/model_spec.h"
#include "common/status.h"

namespace shoal::tune {

struct PrecisionCheck {
  std::string precision;
  bool passed = false;
  std::string gate_json;  // VariantGate::ToJson
  // "int8: within the bound (cosine mean 0.999989, min 0.999988, agreement 100 %)"
  std::string Summary() const;
};

// `base` at each of `precisions` other than f32, against `base` at f32.
Result<std::vector<PrecisionCheck>> CheckPrecisions(
    const ModelSpec& base, const std::vector<std::string>& precisions,
    const std::function<void(const std::string&)>& progress);

}  // namespace shoal::tune
