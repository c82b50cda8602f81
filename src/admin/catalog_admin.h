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
// Versions (catalog/model_version.h): every registration of an id is a
// version with its promotion record — files and digests, license, owner,
// time, memory, a capacity estimate and golden outputs on the probe set
// (probes.h), all taken while the model is loaded for its check. A
// registration whose profile and files equal a version the id already
// serves or keeps is that version again, not a new one (`shoal up`
// registers its profiles at every start). A new version serves at once
// unless registered as a candidate; Promote and Rollback move the serving
// version; the head of the id records each move in one compare-and-set
// (retried on a race), and the catalog is then made to say what the head
// says (Publish): the serving version under the id, the rollback target and
// the candidates under "id@N" (workers load them only when asked for). If
// a process dies between the two, the next change to the id publishes
// again. Pinning and LoRA adapters belong to the id: they stay through
// promotions and rollbacks. An id registered before versions existed
// becomes version 1 at its first change (adopted).
//
// Threading: one CatalogAdmin per thread (cnats KV calls are blocking).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "admin/evaluation.h"
#include "admin/probes.h"
#include "admin/variant_gate.h"
#include "catalog/model_spec.h"
#include "catalog/model_version.h"
#include "queue/control_plane.h"
#include "queue/nats.h"
#include "queue/topology.h"

namespace shoal::admin {

// What a registration says besides the profile.
struct RegisterOptions {
  queue::StreamLimits limits{};
  std::string owner{};          // who registers (provenance.h)
  std::string license{};        // the registrant's statement ("" none)
  bool require_license = false;  // refuse a model without one (the catalog's policy)
  bool candidate = false;        // keep the serving version; this one waits for a promotion
};

// A version and where it stands; for one that does not serve, how its
// golden outputs agree with the serving version's (golden_agreement.h, as
// JSON; empty when they cannot be compared).
struct VersionView {
  ModelVersion version;
  VersionState state = VersionState::kRetired;
  uint32_t serving = 0;
  std::string golden_vs_serving;
};

class CatalogAdmin {
 public:
  // Over a connection of its own.
  // `replicas`: of the KV buckets it creates (queue::ControlPlane).
  static Result<CatalogAdmin> Connect(const std::string& nats_url,
                                      const queue::NatsSecurity& security = {}, int replicas = 0);
  // Over the caller's bucket and JetStream context (not owned).
  CatalogAdmin(kvStore* models, kvStore* versions, jsCtx* js) : models_(models), versions_(versions), js_(js) {}

  // Checks `spec` (see above), records its version, ensures its pool's work
  // stream and consumers, publishes it. Returns the version and its state.
  Result<VersionView> Register(ModelSpec spec, const RegisterOptions& options = {});
  // The serving spec of `id`.
  Result<ModelSpec> Get(std::string_view id);
  // Every model's serving spec.
  Result<std::vector<ModelSpec>> List();

  // The versions of `id`, oldest first, and its head (MODEL_NOT_FOUND
  // without the id).
  Result<std::vector<VersionView>> Versions(std::string_view id, VersionHead* head = nullptr);
  // Version `version` of `id` (0: the serving one).
  Result<VersionView> Version(std::string_view id, uint32_t version);
  // `version` serves; `by` is logged. MODEL_NOT_FOUND without it.
  Result<VersionView> Promote(std::string_view id, uint32_t version, const std::string& by);
  // The version that served before serves again (INVALID_INPUT when there
  // is none); the one it replaces stays as a candidate. Never gated: it is
  // the way back.
  Result<VersionView> Rollback(std::string_view id, const std::string& by);

  // Canaries (catalog/model_spec.h CanarySpec): a share of the id's
  // requests goes to `canary.version` (made a candidate if it was retired);
  // Promote and Rollback end it, and so does StopCanary (`why` is logged:
  // "stopped", or a gateway's reason to end it).
  Result<VersionHead> StartCanary(std::string_view id, const CanarySpec& canary, const std::string& by);
  Result<VersionHead> StopCanary(std::string_view id, const std::string& by, const std::string& why);

  // Evaluations (evaluation.h; catalog_evaluations.cc). Sets attached to an
  // id gate its promotions: a version is promoted (at registration or by
  // Promote) only when each set, run against it through the serving path,
  // meets its thresholds; below them it stays a candidate, its reports
  // stored with it. They run through `serve`: without one (the command
  // line with no gateway), a new version of such an id stays a candidate
  // and Promote refuses.
  void SetServe(ServeFn serve) { serve_ = std::move(serve); }
  // Attaches (or replaces, by name) a set to `id` (at most 768 KiB).
  Result<EvalSet> AttachEvaluation(std::string_view id, std::string_view jsonl);
  Result<std::vector<EvalSet>> Evaluations(std::string_view id);
  Status DetachEvaluation(std::string_view id, std::string_view name);
  // Runs `sets` (none given: the attached ones) against version `version`
  // (0: the serving one) and stores the reports with it.
  Result<std::vector<EvalReport>> Evaluate(std::string_view id, uint32_t version, std::vector<EvalSet> sets = {});
  // Quantized variants (variant_gate.h; catalog_variants.cc): version `of`
  // (0: the serving one) of a native model at `precision` ("int8" or
  // "bf16"), registered as a candidate of the same id and judged against
  // `of` — probe set, and the attached evaluations run on both through
  // `serve`. The judgement goes into its promotion record; a variant
  // outside its bound stays a candidate that Promote and StartCanary refuse.
  // A version from the model store is loaded from its files as `fetch`
  // gives them (a gateway's model cache); without one it is refused.
  using FetchFn = std::function<Result<std::string>(const std::string& digest)>;
  void SetFetch(FetchFn fetch) { fetch_ = std::move(fetch); }
  Result<VersionView> Quantize(std::string_view id, uint32_t of, const std::string& precision,
                               const RegisterOptions& options, const VariantBounds& bounds = {});
  Result<ModelSpec> SetPinned(std::string_view id, bool pinned);
  // Removes `id`: its catalog entries, its versions and their records.
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

  // catalog_versions.cc: the head of `id` and its KV revision (0: none
  // yet; an id registered before versions is adopted as version 1).
  Result<VersionHead> LoadHead(std::string_view id, uint64_t* revision);
  // Writes `head` if it is still at `revision` (0: if there is none).
  Result<bool> StoreHead(std::string_view id, const VersionHead& head, uint64_t revision);
  Result<ModelVersion> LoadVersion(std::string_view id, uint32_t version);
  // Applies `change` to the head until it is stored (re-reading it after a
  // race), then publishes; an error from `change` gives up.
  Result<VersionHead> ChangeHead(std::string_view id, const std::function<Status(VersionHead&)>& change,
                                 const queue::StreamLimits& limits = {});
  // Makes the catalog say what `head` says (see above).
  Status Publish(std::string_view id, const VersionHead& head, const queue::StreamLimits& limits);
  // Stores `v` as a new version of its id (*created), or finds one equal
  // to it that the id serves or keeps; returns its number.
  Result<uint32_t> AddVersion(ModelVersion v, bool* created);
  // Ok when `version` may be promoted: the attached sets all pass against it.
  Status Gate(std::string_view id, uint32_t version);
  Status StoreReports(std::string_view id, uint32_t version, const std::vector<EvalReport>& reports);
  // Applies `change` to version `version`'s record (compare-and-set, retried).
  Status UpdateRecord(std::string_view id, uint32_t version, const std::function<void(ModelVersion&)>& change);
  // Ok unless `v` is a quantized variant that did not stay within its bound.
  static Status Admitted(const VersionView& v);
  // Ok when `spec`, a version of `id` about to serve or canary, takes each
  // LoRA adapter the id carries (they belong to the id and follow it to
  // every version: Publish); one in the model store and not on this
  // machine is not checked.
  Status TakesAdapters(std::string_view id, const ModelSpec& spec);

  ServeFn serve_;
  FetchFn fetch_;

  queue::ControlPlane owned_;  // when connected by Connect
  kvStore* models_ = nullptr;
  kvStore* versions_ = nullptr;
  jsCtx* js_ = nullptr;
};

// The check behind Register, alone: load with the spec's runtime, run one
// small request, then the probe set. Returns what it measured.
struct ModelCheck {
  uint64_t memory_bytes = 0;  // what the loaded model holds
  ProbeRun probes;
};
Result<ModelCheck> CheckModel(const ModelSpec& spec);

}  // namespace shoal::admin
