// CatalogAdmin: registering, listing, pinning and removing models in the
// `shoal_models` KV bucket — what `shoal models`, `shoal up` and the
// gateway's /v1/admin/models routes do.
//
// Registration is validation by the runtime itself: the model is loaded as a
// worker would load it (config, tokenizer and weights present and consistent:
// the runtime checks every tensor against the config) and answers one small
// request with finite numbers. What the loaded model holds becomes the spec's
// `memory_bytes`, which workers budget by. A broken model is refused here with
// the runtime's message (INVALID_INPUT), not at its first request.
//
// The check loads the model in the calling process, so registration takes
// about as long as a cold load, and the model's path must be readable here
// and, at the same path, on the workers.
//
// LoRA adapters a profile names (`loras:`) are checked and measured with
// the model; more are registered on a base model already in the catalog
// (AddLora): the base's runtime checks the adapter against the base without
// loading the base (Runtime::CheckLora) and measures it, and the adapter is
// appended to the base's `loras`. The spec is rewritten with a compare-and-
// set on its KV revision (retried on a race), so adapters added at once to
// one base are all kept. Workers hand a loaded base its new list without
// reloading it (worker_residency.cc).
//
// Threading: one CatalogAdmin per thread (cnats KV calls are blocking).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/model_spec.h"
#include "queue/control_plane.h"
#include "queue/nats.h"
#include "queue/topology.h"

namespace shoal::admin {

class CatalogAdmin {
 public:
  // Over a connection of its own.
  // `replicas`: of the KV buckets it creates (queue::ControlPlane).
  static Result<CatalogAdmin> Connect(const std::string& nats_url,
                                      const queue::NatsSecurity& security = {}, int replicas = 0);
  // Over the caller's bucket and JetStream context (not owned).
  CatalogAdmin(kvStore* models, jsCtx* js) : models_(models), js_(js) {}

  // Checks `spec` (see above), records its memory, ensures its pool's work
  // stream, writes it. Returns the spec as stored.
  Result<ModelSpec> Register(ModelSpec spec, const queue::StreamLimits& limits = {});
  Result<ModelSpec> Get(std::string_view id);
  Result<std::vector<ModelSpec>> List();
  Result<ModelSpec> SetPinned(std::string_view id, bool pinned);
  Status Remove(std::string_view id);

  // Registers adapter `lora` (name and path; a relative path is taken from
  // the current directory) on model `base_id`. Returns the adapter as
  // stored (absolute path, memory_bytes measured). MODEL_NOT_FOUND without
  // the base; INVALID_INPUT for a bad name, a name the base has already, or
  // the runtime's reason to refuse the adapter.
  Result<LoraSpec> AddLora(std::string_view base_id, LoraSpec lora);
  // Removes adapter `name` from `base_id` (MODEL_NOT_FOUND when either is
  // not there).
  Status RemoveLora(std::string_view base_id, std::string_view name);

 private:
  CatalogAdmin() = default;
  // Get, and the entry's KV revision (for a compare-and-set).
  Result<ModelSpec> Get(std::string_view id, uint64_t* revision);
  // Writes `spec` if its entry is still at `revision`; false when it moved on.
  Result<bool> Replace(const ModelSpec& spec, uint64_t revision);
  queue::ControlPlane owned_;  // when connected by Connect
  kvStore* models_ = nullptr;
  jsCtx* js_ = nullptr;
};

// The check behind Register, alone: load with the spec's runtime, run one
// small request. Returns the bytes the loaded model holds.
Result<uint64_t> CheckModel(const ModelSpec& spec);

}  // namespace shoal::admin
