// Model versions: every registration of a model id is a version of it (1,
// 2, ...), kept with its promotion record — where it came from, what its
// files hash to, its license and owner, what it measured at registration,
// its golden outputs on the probe set — and one version of each id serves.
//
// Two kinds of entry, in the `shoal_model_versions` KV bucket
// (admin/model_versions.h keeps them):
//
//   <token>      the id's head: which version serves, the rollback targets
//                (the versions that served before, newest last), the
//                candidates, the last version number given, and the log of
//                what changed (registered, promoted, rolled back; when, by
//                whom) — one entry, so a promotion is one compare-and-set
//   <token>.<N>  version N's record: its spec and promotion record,
//                written once when it is registered
//
// (<token> is queue::ModelToken of the id.) What serves is what the
// `shoal_models` catalog says: the head's serving version under the id,
// and each other version a request may pin ("id@N": the rollback target
// and the candidates) under "id@N"; the rest are recorded only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model_spec.h"
#include "common/status.h"

namespace shoal {

// What a registration measured of a model on this hardware class: how
// many items (encoders, scorers, extractors) or tokens (generators, one
// sequence) a second it ran, in batches of `batch`.
struct CapacityEstimate {
  double per_second = 0;
  std::string unit;  // "items" or "tokens"
  uint32_t batch = 0;
  std::string hardware_class;
};

// One file of the model's directory, as the model store's manifest lists
// it (store/manifest.h).
struct RecordedFile {
  std::string path;
  uint64_t bytes = 0;
  std::string sha256;  // lowercase hex
};

struct PromotionRecord {
  // Where it was registered from: "path:<dir>", "artifact:sha256:<hex>",
  // or "spec" (a profile with no files, such as an upstream's).
  std::string source;
  std::string files_digest;  // the manifest's digest ("" without files)
  std::vector<RecordedFile> files;
  std::string license;         // an SPDX id or the model card's name; "" unknown
  std::string license_source;  // where it was read: "README.md", "LICENSE", "gguf", "registrant"
  std::string owner;           // who registered it (admin/provenance.h Owner*)
  int64_t registered_unix_ms = 0;
  uint64_t memory_bytes = 0;
  CapacityEstimate capacity;
  // The model's answers on the probe set (admin/probes.h), a JSON object:
  // {"probe_set": "...", "outputs": [...]}; what a candidate, a quantized
  // variant or a canary is compared against.
  std::string golden_json;
  // The reports of the evaluations run against it (admin/evaluation.h),
  // each a JSON object, the latest of each evaluation's name.
  std::vector<std::string> evaluations{};
  // A quantized variant (`shoal models quantize`): the version it was made
  // from, its precision, and how it stood against the bound
  // (admin/variant_gate.h), a JSON object; empty for any other version.
  std::string variant_json{};
};

struct ModelVersion {
  uint32_t version = 0;
  ModelSpec spec;  // its id is the model id; spec.version == version
  PromotionRecord record;

  std::string ToJson() const;
  static Result<ModelVersion> Parse(std::string_view json);
};

// One line of a head's log.
struct VersionEvent {
  int64_t unix_ms = 0;
  std::string action;  // "registered", "promoted", "rolled back", "retired"
  uint32_t version = 0;
  std::string by;
};

enum class VersionState : uint8_t { kServing, kRollbackTarget, kCandidate, kRetired };
// "serving", "rollback target", "candidate", "retired".
std::string_view VersionStateName(VersionState s);

struct VersionHead {
  // The versions a request may pin besides the serving one: the newest
  // rollback target and up to this many candidates (the oldest retire).
  static constexpr size_t kMaxCandidates = 4;
  static constexpr size_t kMaxLog = 64;

  uint32_t serving = 0;              // 0: none yet
  std::vector<uint32_t> rollback;    // versions that served before, newest last
  std::vector<uint32_t> candidates;  // registered, not (yet) promoted, oldest first
  uint32_t last = 0;                 // the newest version number given
  CanarySpec canary;  // a share of the id's traffic on a candidate (none: version 0)
  std::vector<VersionEvent> log;     // oldest first, at most kMaxLog

  VersionState StateOf(uint32_t version) const;
  // The versions the catalog keeps loadable besides the serving one.
  std::vector<uint32_t> Pinnable() const;

  // `version` serves; the one serving before becomes the newest rollback
  // target; `version` leaves the candidates and the rollback list. Ends a
  // canary, as Rollback does.
  void Promote(uint32_t version);
  // The newest rollback target serves again; the version it replaces
  // becomes a candidate. False when there is none to return to.
  bool Rollback();
  // Version `version` (new: its number past `last`), as a candidate (the
  // oldest candidates past kMaxCandidates retire).
  void AddCandidate(uint32_t version);
  void Log(int64_t unix_ms, std::string action, uint32_t version, std::string by);

  std::string ToJson() const;
  static Result<VersionHead> Parse(std::string_view json);
};

}  // namespace shoal
