// The names of the catalog: model ids, pool names, LoRA adapter names, and
// what a request's "model" refers to. Checked wherever a name enters Shoal
// (a profile, a request, an API key's scope), so every later stage may
// trust them — the NATS names derived from them included (queue/subjects.h).
#pragma once

#include <cstdint>
#include <string>
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

// Versions of a model (catalog/model_version.h): "id@N" names version N
// (1, 2, ...) of model `id`; a bare id, the version that serves. Model ids
// hold no '@', so the last '@' splits. The catalog keeps a version other
// than the serving one, while it may be asked for (a candidate, the
// rollback target), as a model of its own under that name.
struct VersionRef {
  std::string_view id;
  uint32_t version = 0;  // 0: the serving version
};
// INVALID_INPUT for "id@", "id@0", "id@x" and versions past 2^31.
Result<VersionRef> SplitVersionRef(std::string_view name);
std::string VersionedName(std::string_view id, uint32_t version);  // "id@N"
// A model id, or "id@N": what the catalog may hold a spec under.
Status ValidateServedName(std::string_view name);

}  // namespace shoal
