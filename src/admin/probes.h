// The probe set: a fixed handful of inputs every model answers when it is
// registered. Its answers are the version's golden outputs
// (catalog/model_version.h), what a later version, a quantized variant or a
// canary is compared against; timing more of the same gives the capacity
// estimate of its promotion record.
//
//   encode    8 sentences (an image model: the test image) → each output
//             the model produces, vectors as base64 of float32 LE
//   score     4 query–document pairs → logits
//   extract   4 sentences (an image model: the test image) → entities or
//             labels (or an OCR pipeline's lines)
//   generate  2 prompts → 12 greedy tokens each
//
// The probes never change within a probe set: a new set gets a new name
// (kProbeSetName), and golden outputs are compared only within one set.
#pragma once

#include <string>
#include <string_view>

#include "catalog/model_spec.h"
#include "catalog/model_version.h"
#include "runtime/runtime.h"

namespace shoal::admin {

inline constexpr std::string_view kProbeSetName = "shoal-probes-v1";

// An 8 × 8 PNG of a colour gradient: the input of a model that takes images.
extern const std::string_view kTestImage;

struct ProbeRun {
  std::string golden_json;  // {"probe_set", "task", "outputs": [...]}
  CapacityEstimate capacity;
};

// Runs the probe set through a loaded model, then times batches of it (a
// fifth of a second at most, after the first): INVALID_INPUT with the
// model's reason when a probe fails.
Result<ProbeRun> RunProbes(Model& model, const ModelSpec& spec);

}  // namespace shoal::admin
