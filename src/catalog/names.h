// The names of the catalog: model ids, pool names, LoRA adapter names, and
// what a request's "model" refers to. Checked wherever a name enters Shoal
// (a profile, a request, an API key's scope), so every later stage may
// trust them — the NATS names derived from them included (queue/subjects.h).
#pragma once

#include <string_view>

#include "common/status.h"

namespace shoal {

// Model ids: 1..128 bytes of [A-Za-z0-9._/-], not starting with '.' or '/'.
Status ValidateModelId(std::string_view id);
// Pool names: 1..32 bytes of [a-z0-9_-].
Status ValidatePoolName(std::string_view pool);
// LoRA names: 1..64 bytes of [A-Za-z0-9._-].
Status ValidateLoraName(std::string_view name);
// Model artifacts in the model store (store/manifest.h): "sha256:" and 64
// lowercase hex digits, the digest of the model's manifest.
Status ValidateArtifactDigest(std::string_view digest);

// What a request names: "base" or "base:lora". Model ids hold no ':'
// (names.cc), so the first ':' splits; `lora` is empty without one
// (and also for "base:", which names no adapter: the caller refuses it).
struct ModelRef {
  std::string_view base;
  std::string_view lora;
  bool has_colon = false;
};
ModelRef SplitModelRef(std::string_view model);

}  // namespace shoal
