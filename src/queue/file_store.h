// FileStore: the files of the Files API (gateway/files_api.h) — batch
// inputs now, and the output and error files of batch jobs — kept in
// JetStream, which Shoal already runs on, so that they survive restarts and
// every gateway sees the same ones (replicated on a JetStream cluster):
//
//   shoal_files      KV: one record per file, JSON:
//                    {"id", "filename", "purpose", "owner", "bytes",
//                     "parts", "created_at"}
//   shoal_file_data  KV: its bytes in parts of kPartBytes, "<id>.<n>"
//
// A file's parts are written before its record, and its record removed
// before its parts, so a file that can be found is whole. Ids are "file-"
// and 24 random [a-z0-9].
//
// Threading: thread-safe (cnats KV calls are); every call blocks on the
// server, so callers keep it off event loops.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "queue/nats.h"

namespace shoal::queue {

inline constexpr std::string_view kFilesBucket = "shoal_files";
inline constexpr std::string_view kFileDataBucket = "shoal_file_data";

struct FileRecord {
  std::string id;
  std::string filename;
  std::string purpose;  // "batch" (an upload), "batch_output" (a job's result)
  std::string owner;    // the API key that made it; "" when keys are off
  uint64_t bytes = 0;
  uint32_t parts = 0;
  int64_t created_at = 0;  // Unix seconds

  std::string ToJson() const;  // the record as stored
};
// Strict: every field, of its type, and nothing else.
Result<FileRecord> ParseFileRecord(std::string_view json);

class FileStore {
 public:
  static constexpr size_t kPartBytes = 512 * 1024;  // under nats-server's 1 MB message limit

  // Opens (creating when missing) both buckets.
  static Result<std::unique_ptr<FileStore>> Open(jsCtx* js, int replicas = 0);

  // Stores `bytes` as a new file described by `record` (its id, size,
  // parts and time are set here) and returns the record stored.
  Result<FileRecord> Add(FileRecord record, std::string_view bytes);
  // NOT_FOUND when there is no such file.
  Result<FileRecord> Find(std::string_view id);
  Result<std::string> Read(const FileRecord& file);
  Status Remove(std::string_view id);
  // Every file, oldest first.
  Result<std::vector<FileRecord>> List();

 private:
  FileStore(KvStorePtr records, KvStorePtr data) : records_(std::move(records)), data_(std::move(data)) {}

  KvStorePtr records_;
  KvStorePtr data_;
};

// Whether `id` is shaped like a file id (so it is a safe KV key).
bool ValidFileId(std::string_view id);

}  // namespace shoal::queue
