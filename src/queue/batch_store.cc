#include "queue/batch_store.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/ids.h"
#include "queue/topology.h"

namespace shoal::queue {
namespace {

using nlohmann::json;

constexpr std::string_view kBatchIdPrefix = "batch_";
constexpr size_t kBatchIdToken = 24;

constexpr std::pair<BatchStatus, std::string_view> kStatusNames[] = {
    {BatchStatus::kValidating, "validating"}, {BatchStatus::kFailed, "failed"},
    {BatchStatus::kInProgress, "in_progress"}, {BatchStatus::kFinalizing, "finalizing"},
    {BatchStatus::kCompleted, "completed"},   {BatchStatus::kExpired, "expired"},
    {BatchStatus::kCancelling, "cancelling"}, {BatchStatus::kCancelled, "cancelled"},
};

// The record's times, by their names in the batch object.
template <typename Record>
auto Times(Record& r) {
  return std::array{std::pair{"created_at", &r.created_at},       std::pair{"in_progress_at", &r.in_progress_at},
                    std::pair{"expires_at", &r.expires_at},       std::pair{"finalizing_at", &r.finalizing_at},
                    std::pair{"completed_at", &r.completed_at},   std::pair{"failed_at", &r.failed_at},
                    std::pair{"expired_at", &r.expired_at},       std::pair{"cancelling_at", &r.cancelling_at},
                    std::pair{"cancelled_at", &r.cancelled_at}};
}

json OrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json ApiObject(const BatchRecord& r) {
  json o = {{"id", r.id},
            {"object", "batch"},
            {"endpoint", r.endpoint},
            {"input_file_id", r.input_file_id},
            {"completion_window", r.completion_window},
            {"status", BatchStatusName(r.status)},
            {"output_file_id", OrNull(r.output_file_id)},
            {"error_file_id", OrNull(r.error_file_id)},
            {"request_counts", {{"total", r.total}, {"completed", r.completed}, {"failed", r.failed}}},
            {"metadata", r.metadata.empty() ? json(nullptr) : json(r.metadata)},
            {"errors", nullptr}};
  for (const auto& [name, value] : Times(r)) o[name] = *value == 0 ? json(nullptr) : json(*value);
  if (!r.errors.empty()) {
    json data = json::array();
    for (const BatchError& e : r.errors) {
      data.push_back({{"code", e.code},
                      {"message", e.message},
                      {"param", nullptr},
                      {"line", e.line == 0 ? json(nullptr) : json(e.line)}});
    }
    o["errors"] = {{"object", "list"}, {"data", std::move(data)}};
  }
  return o;
}

Status BadRecord(const std::string& what) { return InvalidInput("batch record: " + what); }

Status GetString(const json& o, const char* field, bool nullable, std::string* out) {
  if (!o.contains(field)) return BadRecord(std::string("missing '") + field + "'");
  const json& v = o[field];
  if (nullable && v.is_null()) return Status::Ok();
  if (!v.is_string()) return BadRecord(std::string(field) + ": expected a string");
  *out = v.get<std::string>();
  return Status::Ok();
}

std::string ResultKey(std::string_view batch, uint32_t line) {
  return std::string(batch) + "." + std::to_string(line);
}

}  // namespace

std::string_view BatchStatusName(BatchStatus status) {
  for (const auto& [s, name] : kStatusNames) {
    if (s == status) return name;
  }
  return "unknown";
}

std::optional<BatchStatus> ParseBatchStatus(std::string_view name) {
  for (const auto& [s, n] : kStatusNames) {
    if (n == name) return s;
  }
  return std::nullopt;
}

bool Finished(BatchStatus s) {
  return s == BatchStatus::kFailed || s == BatchStatus::kCompleted || s == BatchStatus::kExpired ||
         s == BatchStatus::kCancelled;
}

bool ValidBatchId(std::string_view id) {
  if (!id.starts_with(kBatchIdPrefix) || id.size() != kBatchIdPrefix.size() + kBatchIdToken) return false;
  return std::all_of(id.begin() + kBatchIdPrefix.size(), id.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

std::string BatchRecord::ToApiJson() const { return ApiObject(*this).dump(); }

std::string BatchRecord::ToJson() const {
  json o = ApiObject(*this);
  o["shoal"] = {{"owner", owner}, {"runner", runner}, {"lease_until_ms", lease_until_ms}};
  return o.dump();
}

Result<BatchRecord> ParseBatchRecord(std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return BadRecord("not a JSON object");
  BatchRecord r;
  if (o.value("object", "") != "batch") return BadRecord("object: expected \"batch\"");
  for (auto [field, out] : {std::pair{"id", &r.id}, {"endpoint", &r.endpoint}, {"input_file_id", &r.input_file_id},
                            {"completion_window", &r.completion_window}}) {
    SHOAL_RETURN_IF_ERROR(GetString(o, field, false, out));
  }
  if (!ValidBatchId(r.id)) return BadRecord("bad id '" + r.id + "'");
  std::string status;
  SHOAL_RETURN_IF_ERROR(GetString(o, "status", false, &status));
  const auto parsed = ParseBatchStatus(status);
  if (!parsed) return BadRecord("status: unknown '" + status + "'");
  r.status = *parsed;
  SHOAL_RETURN_IF_ERROR(GetString(o, "output_file_id", true, &r.output_file_id));
  SHOAL_RETURN_IF_ERROR(GetString(o, "error_file_id", true, &r.error_file_id));
  for (auto [name, out] : Times(r)) {
    if (!o.contains(name)) return BadRecord(std::string("missing '") + name + "'");
    if (o[name].is_null()) continue;
    if (!o[name].is_number_integer()) return BadRecord(std::string(name) + ": expected Unix seconds or null");
    *out = o[name].get<int64_t>();
  }
  const json& counts = o.contains("request_counts") ? o["request_counts"] : json();
  for (auto [name, out] : {std::pair{"total", &r.total}, {"completed", &r.completed}, {"failed", &r.failed}}) {
    if (!counts.is_object() || !counts.contains(name) || !counts[name].is_number_unsigned()) {
      return BadRecord(std::string("request_counts.") + name + ": expected a count");
    }
    *out = counts[name].get<uint64_t>();
  }
  if (!o.contains("metadata")) return BadRecord("missing 'metadata'");
  if (!o["metadata"].is_null()) {
    if (!o["metadata"].is_object()) return BadRecord("metadata: expected an object");
    for (const auto& [k, v] : o["metadata"].items()) {
      if (!v.is_string()) return BadRecord("metadata: values are strings");
      r.metadata[k] = v.get<std::string>();
    }
  }
  if (!o.contains("errors")) return BadRecord("missing 'errors'");
  if (!o["errors"].is_null()) {
    const json& data = o["errors"].is_object() ? o["errors"].value("data", json()) : json();
    if (!data.is_array()) return BadRecord("errors: expected a list");
    for (const json& e : data) {
      if (!e.is_object() || !e.value("code", json()).is_string() || !e.value("message", json()).is_string()) {
        return BadRecord("errors: each has a code and a message");
      }
      const json line = e.value("line", json());
      r.errors.push_back({e["code"].get<std::string>(), e["message"].get<std::string>(),
                          line.is_number_unsigned() ? line.get<uint32_t>() : 0});
    }
  }
  const json& shoal = o.contains("shoal") ? o["shoal"] : json();
  if (!shoal.is_object()) return BadRecord("missing 'shoal'");
  SHOAL_RETURN_IF_ERROR(GetString(shoal, "owner", false, &r.owner));
  SHOAL_RETURN_IF_ERROR(GetString(shoal, "runner", false, &r.runner));
  if (!shoal.value("lease_until_ms", json()).is_number_integer()) return BadRecord("shoal.lease_until_ms: expected Unix ms");
  r.lease_until_ms = shoal["lease_until_ms"].get<int64_t>();
  return r;
}

Result<std::unique_ptr<BatchStore>> BatchStore::Open(jsCtx* js, int replicas) {
  auto records = OpenBucket(js, kBatchesBucket, 0, replicas);
  if (!records.ok()) return records.status();
  auto results = OpenBucket(js, kBatchResultsBucket, 0, replicas);
  if (!results.ok()) return results.status();
  return std::unique_ptr<BatchStore>(new BatchStore(js, std::move(records).value(), std::move(results).value()));
}

Result<VersionedBatch> BatchStore::Create(BatchRecord record) {
  record.id = std::string(kBatchIdPrefix) + RandomToken(kBatchIdToken);
  record.created_at = static_cast<int64_t>(std::time(nullptr));
  const std::string entry = record.ToJson();
  uint64_t rev = 0;
  SHOAL_RETURN_IF_ERROR(
      FromNats(kvStore_Create(&rev, records_.get(), record.id.c_str(), entry.data(), static_cast<int>(entry.size())),
               "storing batch " + record.id));
  return VersionedBatch{std::move(record), rev};
}

Result<VersionedBatch> BatchStore::Find(std::string_view id) {
  if (!ValidBatchId(id)) return Status(Code::kNotFound, "no batch '" + std::string(id) + "'");
  const std::string key(id);
  kvEntry* e = nullptr;
  const natsStatus s = kvStore_Get(&e, records_.get(), key.c_str());
  if (s == NATS_NOT_FOUND) return Status(Code::kNotFound, "no batch '" + key + "'");
  if (s != NATS_OK) return FromNats(s, "reading batch " + key);
  auto record = ParseBatchRecord(std::string_view(kvEntry_ValueString(e), kvEntry_ValueLen(e)));
  const uint64_t revision = kvEntry_Revision(e);
  kvEntry_Destroy(e);
  if (!record.ok()) return Internal(record.status().message());
  return VersionedBatch{std::move(record).value(), revision};
}

Result<uint64_t> BatchStore::Replace(const BatchRecord& record, uint64_t revision) {
  const std::string entry = record.ToJson();
  uint64_t rev = 0;
  SHOAL_RETURN_IF_ERROR(FromNats(kvStore_Update(&rev, records_.get(), record.id.c_str(), entry.data(),
                                                static_cast<int>(entry.size()), revision),
                                 "updating batch " + record.id + " (changed meanwhile?)"));
  return rev;
}

Result<std::vector<VersionedBatch>> BatchStore::List() {
  std::vector<VersionedBatch> out;
  kvKeysList names;
  const natsStatus s = kvStore_Keys(&names, records_.get(), nullptr);
  if (s == NATS_NOT_FOUND) return out;  // an empty bucket
  if (s != NATS_OK) return FromNats(s, "listing batches");
  for (int i = 0; i < names.Count; ++i) {
    auto batch = Find(names.Keys[i]);
    if (batch.ok()) out.push_back(std::move(batch).value());
  }
  kvKeysList_Destroy(&names);
  std::stable_sort(out.begin(), out.end(), [](const VersionedBatch& a, const VersionedBatch& b) {
    return a.record.created_at < b.record.created_at;
  });
  return out;
}

// A result's entry: 'o' (output) or 'e' (error) and the line itself; one
// too large for a message: 'O' or 'E' and its number of parts, stored first.
Status BatchStore::PutResult(std::string_view batch_id, const BatchResult& result) {
  const std::string key = ResultKey(batch_id, result.line);
  std::string entry;
  if (result.jsonl.size() <= kPartBytes) {
    entry = (result.ok ? "o" : "e") + result.jsonl;
  } else {
    const size_t parts = (result.jsonl.size() + kPartBytes - 1) / kPartBytes;
    for (size_t n = 0; n < parts; ++n) {
      const std::string_view part = std::string_view(result.jsonl).substr(n * kPartBytes, kPartBytes);
      uint64_t rev = 0;
      SHOAL_RETURN_IF_ERROR(FromNats(kvStore_Put(&rev, results_.get(), (key + "." + std::to_string(n)).c_str(),
                                                 part.data(), static_cast<int>(part.size())),
                                     "storing a result part of " + key));
    }
    entry = (result.ok ? "O" : "E") + std::to_string(parts);
  }
  uint64_t rev = 0;
  return FromNats(kvStore_Put(&rev, results_.get(), key.c_str(), entry.data(), static_cast<int>(entry.size())),
                  "storing the result of " + key);
}

Result<std::string> BatchStore::ReadParts(const std::string& key, uint32_t parts) {
  std::string out;
  for (uint32_t n = 0; n < parts; ++n) {
    kvEntry* e = nullptr;
    const std::string part_key = key + "." + std::to_string(n);
    SHOAL_RETURN_IF_ERROR(FromNats(kvStore_Get(&e, results_.get(), part_key.c_str()), "reading " + part_key));
    out.append(static_cast<const char*>(kvEntry_Value(e)), kvEntry_ValueLen(e));
    kvEntry_Destroy(e);
  }
  return out;
}

Result<std::vector<BatchResult>> BatchStore::Results(std::string_view batch_id) {
  // A watch on "<batch>.*" delivers the current value of every line's
  // entry (never the parts: one more token), then a null entry.
  kvWatchOptions opts;
  kvWatchOptions_Init(&opts);
  opts.IgnoreDeletes = true;
  kvWatcher* w = nullptr;
  const std::string filter = std::string(batch_id) + ".*";
  SHOAL_RETURN_IF_ERROR(FromNats(kvStore_Watch(&w, results_.get(), filter.c_str(), &opts), "reading results"));
  std::vector<BatchResult> out;
  Status status;
  for (;;) {
    kvEntry* e = nullptr;
    const natsStatus s = kvWatcher_Next(&e, w, 5000);
    if (s != NATS_OK) {
      status = FromNats(s, "reading the results of " + std::string(batch_id));
      break;
    }
    if (e == nullptr) break;  // every stored result read
    const std::string key = kvEntry_Key(e);
    const std::string_view value(static_cast<const char*>(kvEntry_Value(e)), kvEntry_ValueLen(e));
    BatchResult r;
    const std::string_view line = std::string_view(key).substr(batch_id.size() + 1);
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), r.line);
    if (ec == std::errc() && end == line.data() + line.size() && !value.empty()) {
      const char kind = value[0];
      r.ok = kind == 'o' || kind == 'O';
      if (kind == 'o' || kind == 'e') {
        r.jsonl = std::string(value.substr(1));
      } else {
        uint32_t parts = 0;
        std::from_chars(value.data() + 1, value.data() + value.size(), parts);
        auto whole = ReadParts(key, parts);
        if (!whole.ok()) {
          status = whole.status();
          kvEntry_Destroy(e);
          break;
        }
        r.jsonl = std::move(whole).value();
      }
      out.push_back(std::move(r));
    }
    kvEntry_Destroy(e);
  }
  kvWatcher_Destroy(w);
  if (!status.ok()) return status;
  std::sort(out.begin(), out.end(), [](const BatchResult& a, const BatchResult& b) { return a.line < b.line; });
  return out;
}

Status BatchStore::DropResults(std::string_view batch_id) {
  const std::string stream = "KV_" + std::string(kBatchResultsBucket);
  const std::string subject = "$KV." + std::string(kBatchResultsBucket) + "." + std::string(batch_id) + ".>";
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Purge.Subject = subject.c_str();
  jsErrCode jerr = static_cast<jsErrCode>(0);
  return FromNats(js_PurgeStream(js_, stream.c_str(), &o, &jerr), "dropping the results of " + std::string(batch_id));
}

}  // namespace shoal::queue
