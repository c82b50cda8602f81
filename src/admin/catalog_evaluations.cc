// CatalogAdmin's evaluations (catalog_admin.h, evaluation.h): sets attached
// to an id in `shoal_model_versions` ("<token>.eval.<name>"), run against a
// version through the serving path, their reports kept in its record.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "admin/catalog_admin.h"
#include "admin/versions_bucket.h"
#include "common/log.h"
#include "queue/subjects.h"

namespace shoal::admin {
namespace {

constexpr size_t kMaxEvalSetBytes = 768 * 1024;  // under nats-server's 1 MB message limit

}  // namespace

Result<EvalSet> CatalogAdmin::AttachEvaluation(std::string_view id, std::string_view jsonl) {
  SHOAL_RETURN_IF_ERROR(ValidateModelId(id));
  SHOAL_RETURN_IF_ERROR(Version(id, 0).status());
  if (jsonl.size() > kMaxEvalSetBytes) {
    return Status(Code::kPayloadTooLarge, "an evaluation set holds at most 768 KiB (this one " +
                                              std::to_string(jsonl.size()) + " bytes)");
  }
  SHOAL_ASSIGN_OR_RETURN(EvalSet set, ParseEvalSet(jsonl));
  if (set.name.size() > 64) return InvalidInput("evaluation: a name holds at most 64 characters");
  uint64_t rev = 0;
  SHOAL_RETURN_IF_ERROR(
      queue::FromNats(kvStore_Put(&rev, versions_, versions_bucket::EvalKey(id, set.name).c_str(),
                                  jsonl.data(), static_cast<int>(jsonl.size())),
                      "attach evaluation"));
  return set;
}

Result<std::vector<EvalSet>> CatalogAdmin::Evaluations(std::string_view id) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> keys, versions_bucket::Keys(versions_));
  std::vector<EvalSet> sets;
  for (const std::string& key : keys) {
    if (!key.starts_with(versions_bucket::EvalPrefix(id))) continue;
    auto text = versions_bucket::Get(versions_, key);
    if (!text.ok()) continue;  // detached meanwhile
    SHOAL_ASSIGN_OR_RETURN(EvalSet set, ParseEvalSet(*text));
    sets.push_back(std::move(set));
  }
  return sets;
}

Status CatalogAdmin::DetachEvaluation(std::string_view id, std::string_view name) {
  const std::string key = versions_bucket::EvalKey(id, name);
  if (!versions_bucket::Get(versions_, key).ok()) {
    return Status(Code::kNotFound,
                  "model '" + std::string(id) + "' has no evaluation '" + std::string(name) + "'");
  }
  return queue::FromNats(kvStore_Delete(versions_, key.c_str()), "detach evaluation");
}

Result<std::vector<EvalReport>> CatalogAdmin::Evaluate(std::string_view id, uint32_t version,
                                                       std::vector<EvalSet> sets) {
  if (!serve_)
    return InvalidInput("evaluations run through a gateway (this process has no serving path)");
  SHOAL_ASSIGN_OR_RETURN(VersionView v, Version(id, version));
  if (sets.empty()) {
    SHOAL_ASSIGN_OR_RETURN(sets, Evaluations(id));
  }
  if (sets.empty())
    return InvalidInput("model '" + std::string(id) + "' has no evaluation attached; give a set");
  const uint32_t n = v.version.version;
  if (v.state == VersionState::kRetired) {  // served only once kept again
    SHOAL_RETURN_IF_ERROR(ChangeHead(id, [&](VersionHead& h) {
                            h.AddCandidate(n);
                            return Status::Ok();
                          }).status());
  }
  std::vector<EvalReport> reports;
  for (const EvalSet& set : sets)
    reports.push_back(RunEvaluation(set, VersionedName(id, n), serve_));
  SHOAL_RETURN_IF_ERROR(StoreReports(id, n, reports));
  return reports;
}

Status CatalogAdmin::Gate(std::string_view id, uint32_t version) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<EvalSet> sets, Evaluations(id));
  if (sets.empty()) return Status::Ok();
  if (!serve_) {
    return InvalidInput(
        "model '" + std::string(id) +
        "' has evaluations attached; a version is promoted where they can run, through a gateway "
        "(POST /v1/admin/models/" +
        std::string(id) + "/promote, or shoal models promote --gateway)");
  }
  SHOAL_ASSIGN_OR_RETURN(std::vector<EvalReport> reports, Evaluate(id, version, std::move(sets)));
  std::string failed;
  for (const EvalReport& r : reports) {
    if (!r.passed) failed += (failed.empty() ? "" : "; ") + r.name + ": " + r.failed;
  }
  if (failed.empty()) return Status::Ok();
  return InvalidInput("version " + std::to_string(version) + " of '" + std::string(id) +
                      "' did not pass its evaluations (" + failed + "); it stays a candidate");
}

Status CatalogAdmin::StoreReports(std::string_view id, uint32_t version,
                                  const std::vector<EvalReport>& reports) {
  return UpdateRecord(id, version, [&](ModelVersion& v) {
    for (const EvalReport& r : reports) {
      std::erase_if(v.record.evaluations, [&](const std::string& e) {
        return nlohmann::json::parse(e, nullptr, false).value("evaluation", "") == r.name;
      });
      v.record.evaluations.push_back(r.ToJson());
    }
  });
}

}  // namespace shoal::admin
