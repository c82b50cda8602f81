#include "catalog/model_version.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace shoal {
namespace {

using nlohmann::json;

constexpr size_t kMaxRollback = 16;  // older ones retire

void Erase(std::vector<uint32_t>& list, uint32_t v) { std::erase(list, v); }

bool Contains(const std::vector<uint32_t>& list, uint32_t v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

template <typename T>
Status Read(const json& o, const char* key, T* out) {
  auto it = o.find(key);
  if (it == o.end()) return Status::Ok();
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    return InvalidInput(std::string("version record: '") + key + "' has the wrong type");
  }
  return Status::Ok();
}

json RecordJson(const PromotionRecord& r) {
  json files = json::array();
  for (const RecordedFile& f : r.files)
    files.push_back({{"path", f.path}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  json o = {{"source", r.source},
            {"files_digest", r.files_digest},
            {"files", std::move(files)},
            {"license", r.license},
            {"license_source", r.license_source},
            {"owner", r.owner},
            {"registered_unix_ms", r.registered_unix_ms},
            {"memory_bytes", r.memory_bytes},
            {"capacity",
             {{"per_second", r.capacity.per_second},
              {"unit", r.capacity.unit},
              {"batch", r.capacity.batch},
              {"hardware_class", r.capacity.hardware_class}}}};
  o["golden"] = r.golden_json.empty() ? json(nullptr) : json::parse(r.golden_json, nullptr, false);
  o["evaluations"] = json::array();
  for (const std::string& e : r.evaluations)
    o["evaluations"].push_back(json::parse(e, nullptr, false));
  if (!r.variant_json.empty()) o["variant"] = json::parse(r.variant_json, nullptr, false);
  return o;
}

Status ParseRecord(const json& o, PromotionRecord* r) {
  if (!o.is_object()) return InvalidInput("version record: 'record' is not an object");
  SHOAL_RETURN_IF_ERROR(Read(o, "source", &r->source));
  SHOAL_RETURN_IF_ERROR(Read(o, "files_digest", &r->files_digest));
  SHOAL_RETURN_IF_ERROR(Read(o, "license", &r->license));
  SHOAL_RETURN_IF_ERROR(Read(o, "license_source", &r->license_source));
  SHOAL_RETURN_IF_ERROR(Read(o, "owner", &r->owner));
  SHOAL_RETURN_IF_ERROR(Read(o, "registered_unix_ms", &r->registered_unix_ms));
  SHOAL_RETURN_IF_ERROR(Read(o, "memory_bytes", &r->memory_bytes));
  if (auto files = o.find("files"); files != o.end() && files->is_array()) {
    for (const json& f : *files) {
      RecordedFile file;
      SHOAL_RETURN_IF_ERROR(Read(f, "path", &file.path));
      SHOAL_RETURN_IF_ERROR(Read(f, "bytes", &file.bytes));
      SHOAL_RETURN_IF_ERROR(Read(f, "sha256", &file.sha256));
      r->files.push_back(std::move(file));
    }
  }
  if (auto c = o.find("capacity"); c != o.end() && c->is_object()) {
    SHOAL_RETURN_IF_ERROR(Read(*c, "per_second", &r->capacity.per_second));
    SHOAL_RETURN_IF_ERROR(Read(*c, "unit", &r->capacity.unit));
    SHOAL_RETURN_IF_ERROR(Read(*c, "batch", &r->capacity.batch));
    SHOAL_RETURN_IF_ERROR(Read(*c, "hardware_class", &r->capacity.hardware_class));
  }
  if (auto g = o.find("golden"); g != o.end() && g->is_object()) r->golden_json = g->dump();
  if (auto v = o.find("variant"); v != o.end() && v->is_object()) r->variant_json = v->dump();
  if (auto e = o.find("evaluations"); e != o.end() && e->is_array()) {
    for (const json& report : *e) r->evaluations.push_back(report.dump());
  }
  return Status::Ok();
}

}  // namespace

std::string ModelVersion::ToJson() const {
  return json{
      {"version", version}, {"spec", json::parse(spec.ToJson())}, {"record", RecordJson(record)}}
      .dump();
}

Result<ModelVersion> ModelVersion::Parse(std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object() || !o.contains("spec") || !o.contains("record")) {
    return InvalidInput("version record: expected {\"version\", \"spec\", \"record\"}");
  }
  ModelVersion v;
  SHOAL_RETURN_IF_ERROR(Read(o, "version", &v.version));
  SHOAL_ASSIGN_OR_RETURN(v.spec, ModelSpec::Parse(o["spec"].dump()));
  SHOAL_RETURN_IF_ERROR(ParseRecord(o["record"], &v.record));
  if (v.version == 0 || v.spec.version != v.version)
    return InvalidInput("version record: its versions disagree");
  return v;
}

std::string_view VersionStateName(VersionState s) {
  switch (s) {
    case VersionState::kServing:
      return "serving";
    case VersionState::kRollbackTarget:
      return "rollback target";
    case VersionState::kCandidate:
      return "candidate";
    case VersionState::kRetired:
      return "retired";
  }
  return "retired";
}

VersionState VersionHead::StateOf(uint32_t version) const {
  if (version == serving) return VersionState::kServing;
  if (!rollback.empty() && rollback.back() == version) return VersionState::kRollbackTarget;
  if (Contains(candidates, version)) return VersionState::kCandidate;
  return VersionState::kRetired;
}

std::vector<uint32_t> VersionHead::Pinnable() const {
  std::vector<uint32_t> out = candidates;
  if (!rollback.empty() && !Contains(out, rollback.back())) out.push_back(rollback.back());
  std::sort(out.begin(), out.end());
  return out;
}

void VersionHead::Promote(uint32_t version) {
  canary = {};
  if (version == serving) return;
  Erase(candidates, version);
  Erase(rollback, version);
  if (serving != 0) {
    rollback.push_back(serving);
    if (rollback.size() > kMaxRollback) rollback.erase(rollback.begin());
  }
  serving = version;
}

bool VersionHead::Rollback() {
  if (rollback.empty()) return false;
  canary = {};
  const uint32_t back = rollback.back();
  rollback.pop_back();
  candidates.push_back(serving);
  if (candidates.size() > kMaxCandidates) candidates.erase(candidates.begin());
  serving = back;
  return true;
}

void VersionHead::AddCandidate(uint32_t version) {
  last = std::max(last, version);
  if (version == serving || Contains(candidates, version)) return;
  Erase(rollback, version);
  candidates.push_back(version);
  if (candidates.size() > kMaxCandidates) candidates.erase(candidates.begin());
}

void VersionHead::Log(int64_t unix_ms, std::string action, uint32_t version, std::string by) {
  log.push_back({unix_ms, std::move(action), version, std::move(by)});
  if (log.size() > kMaxLog) log.erase(log.begin());
}

std::string VersionHead::ToJson() const {
  json events = json::array();
  for (const VersionEvent& e : log) {
    events.push_back(
        {{"unix_ms", e.unix_ms}, {"action", e.action}, {"version", e.version}, {"by", e.by}});
  }
  return json{{"serving", serving},
              {"rollback", rollback},
              {"candidates", candidates},
              {"last", last},
              {"canary", json::parse(canary.ToJson())},
              {"log", std::move(events)}}
      .dump();
}

Result<VersionHead> VersionHead::Parse(std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return InvalidInput("version head: not a JSON object");
  VersionHead h;
  SHOAL_RETURN_IF_ERROR(Read(o, "serving", &h.serving));
  SHOAL_RETURN_IF_ERROR(Read(o, "rollback", &h.rollback));
  SHOAL_RETURN_IF_ERROR(Read(o, "candidates", &h.candidates));
  SHOAL_RETURN_IF_ERROR(Read(o, "last", &h.last));
  if (auto c = o.find("canary"); c != o.end()) {
    SHOAL_ASSIGN_OR_RETURN(h.canary, CanarySpec::Parse(c->dump()));
  }
  if (auto log = o.find("log"); log != o.end() && log->is_array()) {
    for (const json& e : *log) {
      VersionEvent ev;
      SHOAL_RETURN_IF_ERROR(Read(e, "unix_ms", &ev.unix_ms));
      SHOAL_RETURN_IF_ERROR(Read(e, "action", &ev.action));
      SHOAL_RETURN_IF_ERROR(Read(e, "version", &ev.version));
      SHOAL_RETURN_IF_ERROR(Read(e, "by", &ev.by));
      h.log.push_back(std::move(ev));
    }
  }
  return h;
}

}  // namespace shoal
