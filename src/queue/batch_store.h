// BatchStore: the jobs of the Batch API (gateway/batches_api.h) and their
// results so far, kept in JetStream so that a job survives gateway and
// worker restarts and is resumed where it stopped:
//
//   shoal_batches        KV: one record per job, JSON — OpenAI's batch
//                        object and a "shoal" object: {"owner", "runner",
//                        "lease_until_ms"} (who created it; the gateway
//                        running it, and until when that claim holds)
//   shoal_batch_results  KV: "<batch>.<line>", the line's output or error
//                        file line, stored when its response came; a result
//                        over kPartBytes goes in parts "<batch>.<line>.<n>"
//
// Records change by compare-and-set on their KV revision (Replace), so a
// cancel from one gateway and the runner's progress from another never
// overwrite each other. Ids are "batch_" and 24 random [a-z0-9].
//
// Threading: thread-safe (cnats KV calls are); every call blocks on the
// server, so callers keep it off event loops.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "queue/nats.h"

namespace shoal::queue {

inline constexpr std::string_view kBatchesBucket = "shoal_batches";
inline constexpr std::string_view kBatchResultsBucket = "shoal_batch_results";

// OpenAI's batch statuses.
enum class BatchStatus {
  kValidating,  // created; no runner has read its input yet
  kFailed,      // its input could not be read (errors say why)
  kInProgress,
  kFinalizing,  // every line answered; its files being written
  kCompleted,
  kExpired,     // its completion window passed first
  kCancelling,  // asked to stop; the requests in flight finish
  kCancelled,
};
std::string_view BatchStatusName(BatchStatus status);
std::optional<BatchStatus> ParseBatchStatus(std::string_view name);
// Failed, completed, expired or cancelled: nothing more happens to it.
bool Finished(BatchStatus status);

struct BatchError {
  std::string code;
  std::string message;
  uint32_t line = 0;  // 0: not about one line
};

struct BatchRecord {
  std::string id;
  std::string endpoint;
  std::string input_file_id;
  std::string completion_window;
  BatchStatus status = BatchStatus::kValidating;
  std::string output_file_id;  // "" until it has one
  std::string error_file_id;
  // Unix seconds; 0 until it happens.
  int64_t created_at = 0, in_progress_at = 0, expires_at = 0, finalizing_at = 0, completed_at = 0, failed_at = 0,
          expired_at = 0, cancelling_at = 0, cancelled_at = 0;
  uint64_t total = 0, completed = 0, failed = 0;  // request_counts
  std::map<std::string, std::string> metadata;
  std::vector<BatchError> errors;
  // Shoal's own.
  std::string owner;   // the API key that created it; "" when keys are off
  std::string runner;  // the gateway running it; "" none
  int64_t lease_until_ms = 0;  // Unix ms: the runner's claim holds until then

  // The batch object the API answers (without Shoal's own fields).
  std::string ToApiJson() const;
  std::string ToJson() const;  // the record as stored
};
Result<BatchRecord> ParseBatchRecord(std::string_view json);

// A record and the KV revision it was read at.
struct VersionedBatch {
  BatchRecord record;
  uint64_t revision = 0;
};

// One line's result: the line it answers (1-based, in the input file) and
// the line of the output file (`ok`) or of the error file, without its
// newline.
struct BatchResult {
  uint32_t line = 0;
  bool ok = false;
  std::string jsonl;
};

class BatchStore {
 public:
  static constexpr size_t kPartBytes = 512 * 1024;  // under nats-server's 1 MB message limit

  // Opens (creating when missing) both buckets.
  static Result<std::unique_ptr<BatchStore>> Open(jsCtx* js, int replicas = 0);

  kvStore* records() const { return records_.get(); }  // to watch

  // Stores a new job (its id and created_at set here).
  Result<VersionedBatch> Create(BatchRecord record);
  // NOT_FOUND when there is no such job.
  Result<VersionedBatch> Find(std::string_view id);
  // Writes `record` if it is still at `revision`; an error (and nothing
  // written) when it changed meanwhile: read it again.
  Result<uint64_t> Replace(const BatchRecord& record, uint64_t revision);
  // Every job, oldest first.
  Result<std::vector<VersionedBatch>> List();

  Status PutResult(std::string_view batch_id, const BatchResult& result);
  // The results stored for a job, by line.
  Result<std::vector<BatchResult>> Results(std::string_view batch_id);
  Status DropResults(std::string_view batch_id);

 private:
  BatchStore(jsCtx* js, KvStorePtr records, KvStorePtr results)
      : js_(js), records_(std::move(records)), results_(std::move(results)) {}
  Result<std::string> ReadParts(const std::string& key, uint32_t parts);

  jsCtx* const js_;
  KvStorePtr records_;
  KvStorePtr results_;
};

// Whether `id` is shaped like a batch id (so it is a safe KV key).
bool ValidBatchId(std::string_view id);

}  // namespace shoal::queue
