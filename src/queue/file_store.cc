#include "queue/file_store.h"

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/ids.h"
#include "queue/topology.h"

namespace shoal::queue {
namespace {

using nlohmann::json;

constexpr std::string_view kIdPrefix = "file-";
constexpr size_t kIdToken = 24;

std::string PartKey(std::string_view id, uint32_t n) { return std::string(id) + "." + std::to_string(n); }

}  // namespace

bool ValidFileId(std::string_view id) {
  if (!id.starts_with(kIdPrefix) || id.size() != kIdPrefix.size() + kIdToken) return false;
  return std::all_of(id.begin() + kIdPrefix.size(), id.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

std::string FileRecord::ToJson() const {
  return json{{"id", id},       {"filename", filename}, {"purpose", purpose},      {"owner", owner},
              {"bytes", bytes}, {"parts", parts},       {"created_at", created_at}}
      .dump();
}

Result<FileRecord> ParseFileRecord(std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return InvalidInput("file record: not a JSON object");
  static constexpr std::string_view kFields[] = {"id", "filename", "purpose", "owner", "bytes", "parts", "created_at"};
  if (o.size() != std::size(kFields)) return InvalidInput("file record: expected exactly its seven fields");
  for (std::string_view f : kFields) {
    if (!o.contains(f)) return InvalidInput("file record: missing '" + std::string(f) + "'");
  }
  FileRecord r;
  for (auto [field, out] : {std::pair{"id", &r.id}, {"filename", &r.filename}, {"purpose", &r.purpose},
                            {"owner", &r.owner}}) {
    if (!o[field].is_string()) return InvalidInput(std::string("file record: ") + field + ": expected a string");
    *out = o[field].get<std::string>();
  }
  if (!ValidFileId(r.id)) return InvalidInput("file record: bad id '" + r.id + "'");
  if (!o["bytes"].is_number_unsigned() || !o["parts"].is_number_unsigned() ||
      !o["created_at"].is_number_integer()) {
    return InvalidInput("file record: bytes, parts and created_at are whole numbers");
  }
  r.bytes = o["bytes"].get<uint64_t>();
  r.parts = o["parts"].get<uint32_t>();
  r.created_at = o["created_at"].get<int64_t>();
  if (r.parts != (r.bytes + FileStore::kPartBytes - 1) / FileStore::kPartBytes) {
    return InvalidInput("file record: parts do not match bytes");
  }
  return r;
}

Result<std::unique_ptr<FileStore>> FileStore::Open(jsCtx* js, int replicas) {
  auto records = OpenBucket(js, kFilesBucket, 0, replicas);
  if (!records.ok()) return records.status();
  auto data = OpenBucket(js, kFileDataBucket, 0, replicas);
  if (!data.ok()) return data.status();
  return std::unique_ptr<FileStore>(new FileStore(std::move(records).value(), std::move(data).value()));
}

Result<FileRecord> FileStore::Add(FileRecord record, std::string_view bytes) {
  record.id = std::string(kIdPrefix) + RandomToken(kIdToken);
  record.bytes = bytes.size();
  record.parts = static_cast<uint32_t>((bytes.size() + kPartBytes - 1) / kPartBytes);
  record.created_at = static_cast<int64_t>(std::time(nullptr));
  for (uint32_t n = 0; n < record.parts; ++n) {
    const std::string_view part = bytes.substr(n * kPartBytes, kPartBytes);
    uint64_t rev = 0;
    const std::string key = PartKey(record.id, n);
    if (Status s = FromNats(kvStore_Put(&rev, data_.get(), key.c_str(), part.data(), static_cast<int>(part.size())),
                            "storing part " + std::to_string(n) + " of " + record.id);
        !s.ok()) {
      for (uint32_t k = 0; k < n; ++k) (void)kvStore_Purge(data_.get(), PartKey(record.id, k).c_str(), nullptr);
      return s;
    }
  }
  const std::string entry = record.ToJson();
  uint64_t rev = 0;
  SHOAL_RETURN_IF_ERROR(
      FromNats(kvStore_Create(&rev, records_.get(), record.id.c_str(), entry.data(), static_cast<int>(entry.size())),
               "storing the record of " + record.id));
  return record;
}

Result<FileRecord> FileStore::Find(std::string_view id) {
  if (!ValidFileId(id)) return Status(Code::kNotFound, "no file '" + std::string(id) + "'");
  const std::string key(id);
  kvEntry* e = nullptr;
  const natsStatus s = kvStore_Get(&e, records_.get(), key.c_str());
  if (s == NATS_NOT_FOUND) return Status(Code::kNotFound, "no file '" + key + "'");
  if (s != NATS_OK) return FromNats(s, "reading the record of " + key);
  auto record = ParseFileRecord(std::string_view(kvEntry_ValueString(e), kvEntry_ValueLen(e)));
  kvEntry_Destroy(e);
  if (!record.ok()) return Internal(record.status().message());
  return record;
}

Result<std::string> FileStore::Read(const FileRecord& file) {
  std::string bytes;
  bytes.reserve(file.bytes);
  for (uint32_t n = 0; n < file.parts; ++n) {
    kvEntry* e = nullptr;
    const std::string key = PartKey(file.id, n);
    const natsStatus s = kvStore_Get(&e, data_.get(), key.c_str());
    if (s == NATS_NOT_FOUND) return Status(Code::kNotFound, "file " + file.id + " was removed");
    if (s != NATS_OK) return FromNats(s, "reading part " + std::to_string(n) + " of " + file.id);
    bytes.append(static_cast<const char*>(kvEntry_Value(e)), kvEntry_ValueLen(e));
    kvEntry_Destroy(e);
  }
  if (bytes.size() != file.bytes) return Internal("file " + file.id + " is not whole");
  return bytes;
}

Status FileStore::Remove(std::string_view id) {
  auto record = Find(id);
  if (!record.ok()) return record.status();
  SHOAL_RETURN_IF_ERROR(
      FromNats(kvStore_Purge(records_.get(), record->id.c_str(), nullptr), "removing the record of " + record->id));
  for (uint32_t n = 0; n < record->parts; ++n) {
    (void)kvStore_Purge(data_.get(), PartKey(record->id, n).c_str(), nullptr);  // unreachable already
  }
  return Status::Ok();
}

Result<std::vector<FileRecord>> FileStore::List() {
  std::vector<FileRecord> out;
  kvKeysList names;
  const natsStatus s = kvStore_Keys(&names, records_.get(), nullptr);
  if (s == NATS_NOT_FOUND) return out;  // an empty bucket
  if (s != NATS_OK) return FromNats(s, "listing files");
  for (int i = 0; i < names.Count; ++i) {
    auto record = Find(names.Keys[i]);
    if (record.ok()) out.push_back(std::move(record).value());  // else removed meanwhile
  }
  kvKeysList_Destroy(&names);
  std::stable_sort(out.begin(), out.end(),
                   [](const FileRecord& a, const FileRecord& b) { return a.created_at < b.created_at; });
  return out;
}

}  // namespace shoal::queue
