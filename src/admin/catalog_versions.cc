// CatalogAdmin's versions (catalog_admin.h, catalog/model_version.h): the
// head and records in `shoal_model_versions`, and publishing a head into
// the catalog.
#include <algorithm>
#include <charconv>

#include "admin/catalog_admin.h"
#include "admin/golden_agreement.h"
#include "admin/versions_bucket.h"
#include "common/clock.h"
#include "common/log.h"
#include "queue/catalog_watch.h"
#include "queue/subjects.h"

namespace shoal::admin {

namespace versions_bucket {

std::string HeadKey(std::string_view id) { return queue::ModelToken(id); }
std::string RecordKey(std::string_view id, uint32_t version) {
  return queue::ModelToken(id) + "." + std::to_string(version);
}
std::string EvalPrefix(std::string_view id) { return queue::ModelToken(id) + ".eval."; }
std::string EvalKey(std::string_view id, std::string_view name) {
  return EvalPrefix(id) + queue::ModelToken(name);
}

Result<std::string> Get(kvStore* kv, const std::string& key, uint64_t* revision) {
  kvEntry* e = nullptr;
  const natsStatus s = kvStore_Get(&e, kv, key.c_str());
  if (s == NATS_NOT_FOUND) return Status(Code::kNotFound, key);
  if (s != NATS_OK) return queue::FromNats(s, "versions get " + key);
  std::string value(kvEntry_ValueString(e), kvEntry_ValueLen(e));
  if (revision) *revision = kvEntry_Revision(e);
  kvEntry_Destroy(e);
  return value;
}

Result<std::vector<std::string>> Keys(kvStore* kv) {
  kvKeysList keys;
  std::vector<std::string> out;
  const natsStatus s = kvStore_Keys(&keys, kv, nullptr);
  if (s == NATS_NOT_FOUND) return out;  // an empty bucket
  if (s != NATS_OK) return queue::FromNats(s, "keys");
  for (int i = 0; i < keys.Count; ++i) out.emplace_back(keys.Keys[i]);
  kvKeysList_Destroy(&keys);
  return out;
}

}  // namespace versions_bucket

namespace {

using versions_bucket::HeadKey;
using versions_bucket::Keys;
using versions_bucket::RecordKey;

constexpr int kAttempts = 8;  // compare-and-set rounds before giving up on a busy id

// The numbers after `prefix` among `keys` ("<prefix><N>").
std::vector<uint32_t> NumbersAfter(const std::vector<std::string>& keys, std::string_view prefix) {
  std::vector<uint32_t> out;
  for (std::string_view k : keys) {
    if (!k.starts_with(prefix)) continue;
    k.remove_prefix(prefix.size());
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), n);
    if (ec == std::errc() && end == k.data() + k.size() && n > 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What makes two registrations the same version: the profile (without
// what is measured or belongs to the id) and the files.
std::string Fingerprint(const ModelVersion& v) {
  ModelSpec s = v.spec;
  s.memory_bytes = 0;
  s.pinned = false;
  s.version = 0;
  for (LoraSpec& l : s.loras) l.memory_bytes = 0;
  return s.ToJson() + "\n" + v.record.files_digest;
}

Status NotFound(std::string_view id) {
  return Status(Code::kModelNotFound, "model '" + std::string(id) + "' is not in the catalog");
}

}  // namespace

Result<VersionHead> CatalogAdmin::LoadHead(std::string_view id, uint64_t* revision) {
  *revision = 0;
  auto text = versions_bucket::Get(versions_, HeadKey(id), revision);
  if (text.ok()) return VersionHead::Parse(*text);
  if (text.status().code() != Code::kNotFound) return text.status();
  // No head: a new id, or one registered before versions existed (adopted
  // as version 1, from what the catalog holds).
  VersionHead head;
  uint64_t catalog_revision = 0;
  auto serving = Get(id, &catalog_revision);
  if (!serving.ok()) {
    if (serving.status().code() == Code::kModelNotFound) return head;
    return serving.status();
  }
  ModelVersion v{
      .version = std::max<uint32_t>(1, serving->version), .spec = *serving, .record = {}};
  v.spec.version = v.version;
  v.record.source = "adopted: registered before versions";
  v.record.memory_bytes = serving->memory_bytes;
  const std::string json = v.ToJson();
  uint64_t rev = 0;
  kvStore_Create(&rev, versions_, RecordKey(id, v.version).c_str(), json.data(),
                 static_cast<int>(json.size()));
  head.serving = head.last = v.version;
  head.Log(UnixMillis(), "adopted", v.version, "");
  return head;
}

Result<bool> CatalogAdmin::StoreHead(std::string_view id, const VersionHead& head,
                                     uint64_t revision) {
  const std::string key = HeadKey(id), json = head.ToJson();
  uint64_t rev = 0;
  const natsStatus s = revision == 0 ? kvStore_Create(&rev, versions_, key.c_str(), json.data(),
                                                      static_cast<int>(json.size()))
                                     : kvStore_Update(&rev, versions_, key.c_str(), json.data(),
                                                      static_cast<int>(json.size()), revision);
  if (s == NATS_OK) return true;
  // Someone changed the head meanwhile: not an error, a new round.
  uint64_t now = 0;
  auto current = versions_bucket::Get(versions_, key, &now);
  if ((current.ok() && now != revision) || (!current.ok() && revision != 0)) return false;
  return queue::FromNats(s, "versions head " + std::string(id));
}

Result<ModelVersion> CatalogAdmin::LoadVersion(std::string_view id, uint32_t version) {
  auto text = versions_bucket::Get(versions_, RecordKey(id, version));
  if (!text.ok() && text.status().code() == Code::kNotFound) {
    return Status(Code::kModelNotFound,
                  "model '" + std::string(id) + "' has no version " + std::to_string(version));
  }
  if (!text.ok()) return text.status();
  return ModelVersion::Parse(*text);
}

Status CatalogAdmin::UpdateRecord(std::string_view id, uint32_t version,
                                  const std::function<void(ModelVersion&)>& change) {
  const std::string key = RecordKey(id, version);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    uint64_t revision = 0;
    SHOAL_ASSIGN_OR_RETURN(std::string text, versions_bucket::Get(versions_, key, &revision));
    SHOAL_ASSIGN_OR_RETURN(ModelVersion v, ModelVersion::Parse(text));
    change(v);
    const std::string json = v.ToJson();
    uint64_t rev = 0;
    if (kvStore_Update(&rev, versions_, key.c_str(), json.data(), static_cast<int>(json.size()), revision) ==
        NATS_OK) {
      return Status::Ok();
    }
  }
  return Status(Code::kNoCapacity, "the record of '" + std::string(id) + "' kept changing; not stored");
}

Result<VersionHead> CatalogAdmin::ChangeHead(std::string_view id,
                                             const std::function<Status(VersionHead&)>& change,
                                             const queue::StreamLimits& limits) {
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    uint64_t revision = 0;
    SHOAL_ASSIGN_OR_RETURN(VersionHead head, LoadHead(id, &revision));
    SHOAL_RETURN_IF_ERROR(change(head));
    SHOAL_ASSIGN_OR_RETURN(bool stored, StoreHead(id, head, revision));
    if (!stored) continue;
    SHOAL_RETURN_IF_ERROR(Publish(id, head, limits));
    return head;
  }
  return Status(Code::kNoCapacity, "model '" + std::string(id) + "' kept changing; try again");
}

Status CatalogAdmin::Publish(std::string_view id, const VersionHead& head,
                             const queue::StreamLimits& limits) {
  if (head.serving == 0) return Status::Ok();
  SHOAL_ASSIGN_OR_RETURN(ModelVersion serving, LoadVersion(id, head.serving));
  // What belongs to the id, not to a version: its pin and its adapters.
  ModelSpec entry = serving.spec;
  entry.canary = head.canary;
  if (auto current = Get(id); current.ok()) {
    entry.pinned = current->pinned;
    for (const LoraSpec& l : current->loras) {
      if (!entry.FindLora(l.name)) entry.loras.push_back(l);
    }
  }
  auto put = [&](const ModelSpec& spec) -> Status {
    SHOAL_RETURN_IF_ERROR(queue::EnsureWorkStreamExists(js_, spec.pool, limits));
    SHOAL_RETURN_IF_ERROR(queue::EnsureConsumer(js_, spec));
    if (auto now = Get(spec.id); now.ok() && now->ToJson() == spec.ToJson()) return Status::Ok();
    return queue::PutModel(models_, spec);
  };
  SHOAL_RETURN_IF_ERROR(put(entry));
  const std::vector<uint32_t> pinnable = head.Pinnable();
  for (uint32_t v : pinnable) {
    auto kept = LoadVersion(id, v);
    if (!kept.ok()) {
      spdlog::warn("catalog: {}@{} is kept but has no record: {}", id, v, kept.status().ToString());
      continue;
    }
    ModelSpec spec = kept->spec;
    spec.id = VersionedName(id, v);
    spec.pinned = false;
    spec.loras = entry.loras;
    SHOAL_RETURN_IF_ERROR(put(spec));
  }
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> keys, Keys(models_));
  for (uint32_t v : NumbersAfter(keys, queue::CatalogKey(std::string(id) + "@"))) {
    if (std::find(pinnable.begin(), pinnable.end(), v) != pinnable.end()) continue;
    SHOAL_RETURN_IF_ERROR(queue::DeleteModel(models_, VersionedName(id, v)));
  }
  return Status::Ok();
}

Result<uint32_t> CatalogAdmin::AddVersion(ModelVersion v, bool* created) {
  *created = false;
  const std::string& id = v.spec.id;
  uint64_t revision = 0;
  SHOAL_ASSIGN_OR_RETURN(VersionHead head, LoadHead(id, &revision));
  std::vector<uint32_t> kept = head.Pinnable();
  if (head.serving != 0) kept.push_back(head.serving);
  const std::string fingerprint = Fingerprint(v);
  for (uint32_t k : kept) {
    auto existing = LoadVersion(id, k);
    if (existing.ok() && Fingerprint(*existing) == fingerprint) return k;
  }
  // A new number: claimed by creating its record, so two registrations at
  // once get two.
  for (uint32_t n = head.last + 1; n < head.last + 1 + 64; ++n) {
    v.version = v.spec.version = n;
    const std::string json = v.ToJson();
    uint64_t rev = 0;
    const natsStatus s = kvStore_Create(&rev, versions_, RecordKey(id, n).c_str(), json.data(),
                                        static_cast<int>(json.size()));
    if (s == NATS_OK) {
      *created = true;
      return n;
    }
    if (!versions_bucket::Get(versions_, RecordKey(id, n)).ok())
      return queue::FromNats(s, "versions record " + id);
  }
  return Status(Code::kNoCapacity, "model '" + id + "' kept changing; try again");
}

Result<std::vector<VersionView>> CatalogAdmin::Versions(std::string_view id,
                                                        VersionHead* head_out) {
  uint64_t revision = 0;
  SHOAL_ASSIGN_OR_RETURN(VersionHead head, LoadHead(id, &revision));
  if (head.serving == 0 && head.last == 0) return NotFound(id);
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> keys, Keys(versions_));
  std::vector<VersionView> out;
  for (uint32_t n : NumbersAfter(keys, HeadKey(id) + ".")) {
    auto v = LoadVersion(id, n);
    if (!v.ok()) continue;  // removed meanwhile
    out.push_back({std::move(v).value(), head.StateOf(n), head.serving, {}});
  }
  if (head_out) *head_out = std::move(head);
  return out;
}

Result<VersionView> CatalogAdmin::Version(std::string_view id, uint32_t version) {
  uint64_t revision = 0;
  SHOAL_ASSIGN_OR_RETURN(VersionHead head, LoadHead(id, &revision));
  if (head.serving == 0 && head.last == 0) return NotFound(id);
  const uint32_t n = version == 0 ? head.serving : version;
  SHOAL_ASSIGN_OR_RETURN(ModelVersion v, LoadVersion(id, n));
  VersionView view{std::move(v), head.StateOf(n), head.serving, {}};
  if (n != head.serving) {
    auto serving = LoadVersion(id, head.serving);
    auto agreement = serving.ok() ? CompareGolden(view.version.record.golden_json, serving->record.golden_json)
                                  : Result<GoldenAgreement>(serving.status());
    if (agreement.ok()) view.golden_vs_serving = agreement->ToJson(TaskName(view.version.spec.task));
  }
  return view;
}

Result<VersionView> CatalogAdmin::Promote(std::string_view id, uint32_t version,
                                          const std::string& by) {
  SHOAL_RETURN_IF_ERROR(ValidateModelId(id));
  SHOAL_ASSIGN_OR_RETURN(VersionView target, Version(id, version));  // there, and a record to serve
  if (target.state != VersionState::kServing) {
    SHOAL_RETURN_IF_ERROR(Admitted(target));
    SHOAL_RETURN_IF_ERROR(TakesAdapters(id, target.version.spec));
    SHOAL_RETURN_IF_ERROR(Gate(id, version));
  }
  SHOAL_RETURN_IF_ERROR(ChangeHead(id, [&](VersionHead& h) {
                          if (h.serving == version) return Status::Ok();
                          h.Promote(version);
                          h.Log(UnixMillis(), "promoted", version, by);
                          return Status::Ok();
                        }).status());
  return Version(id, version);
}

Result<VersionHead> CatalogAdmin::StartCanary(std::string_view id, const CanarySpec& canary, const std::string& by) {
  SHOAL_RETURN_IF_ERROR(ValidateModelId(id));
  if (canary.fraction <= 0 || canary.fraction > 1) return InvalidInput("canary: fraction is above 0, at most 1");
  if (canary.max_error_rate < 0 || canary.max_error_rate > 1) return InvalidInput("canary: max_error_rate is 0 to 1");
  SHOAL_ASSIGN_OR_RETURN(VersionView target, Version(id, canary.version));
  if (target.state == VersionState::kServing) {
    return InvalidInput("canary: version " + std::to_string(canary.version) + " of '" + std::string(id) +
                        "' serves already");
  }
  SHOAL_RETURN_IF_ERROR(Admitted(target));
  SHOAL_RETURN_IF_ERROR(TakesAdapters(id, target.version.spec));  // "id:lora" requests go there too
  return ChangeHead(id, [&](VersionHead& h) {
    h.AddCandidate(canary.version);
    h.canary = canary;
    h.Log(UnixMillis(), "canary started", canary.version, by);
    return Status::Ok();
  });
}

Result<VersionHead> CatalogAdmin::StopCanary(std::string_view id, const std::string& by, const std::string& why) {
  SHOAL_RETURN_IF_ERROR(ValidateModelId(id));
  return ChangeHead(id, [&](VersionHead& h) {
    if (!h.canary.active()) return InvalidInput("model '" + std::string(id) + "' has no canary");
    h.Log(UnixMillis(), "canary ended: " + why, h.canary.version, by);
    h.canary = {};
    return Status::Ok();
  });
}

Result<VersionView> CatalogAdmin::Rollback(std::string_view id, const std::string& by) {
  SHOAL_RETURN_IF_ERROR(ValidateModelId(id));
  SHOAL_RETURN_IF_ERROR(Version(id, 0).status());
  auto head = ChangeHead(id, [&](VersionHead& h) {
    if (!h.Rollback()) {
      return InvalidInput("model '" + std::string(id) + "' has no earlier version to roll back to");
    }
    h.Log(UnixMillis(), "rolled back", h.serving, by);
    return Status::Ok();
  });
  if (!head.ok()) return head.status();
  return Version(id, head->serving);
}

Status CatalogAdmin::Remove(std::string_view id) {
  SHOAL_RETURN_IF_ERROR(ValidateModelId(id));
  if (auto spec = Get(id); !spec.ok()) return spec.status();
  // The catalog first (workers stop serving it), then the records.
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> entries, Keys(models_));
  for (uint32_t v : NumbersAfter(entries, queue::CatalogKey(std::string(id) + "@"))) {
    SHOAL_RETURN_IF_ERROR(queue::DeleteModel(models_, VersionedName(id, v)));
  }
  SHOAL_RETURN_IF_ERROR(queue::DeleteModel(models_, id));
  SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> records, Keys(versions_));
  for (uint32_t v : NumbersAfter(records, HeadKey(id) + ".")) {
    SHOAL_RETURN_IF_ERROR(
        queue::FromNats(kvStore_Delete(versions_, RecordKey(id, v).c_str()), "versions delete"));
  }
  for (const std::string& key : records) {
    if (!key.starts_with(versions_bucket::EvalPrefix(id))) continue;
    SHOAL_RETURN_IF_ERROR(
        queue::FromNats(kvStore_Delete(versions_, key.c_str()), "versions delete"));
  }
  const natsStatus s = kvStore_Delete(versions_, HeadKey(id).c_str());
  return s == NATS_NOT_FOUND ? Status::Ok() : queue::FromNats(s, "versions delete");
}

}  // namespace shoal::admin
