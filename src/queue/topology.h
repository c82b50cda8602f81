// The JetStream objects Shoal relies on, created idempotently by whoever needs
// them first (bootstrap, gateways, workers): every Ensure* call succeeds when
// the object already exists with the same configuration and updates it when
// the configuration changed.
//
//   SHOAL_WORK_<pool>  WorkQueue stream on shoal.work.<pool>.>, file storage,
//                      discard-new limits (a full stream rejects work, so the
//                      gateway answers 503 OVERLOADED rather than queueing
//                      without bound), 2-minute duplicate window. The limits
//                      hold for the whole stream and per model (one subject
//                      per model, discard-new per subject: one model's
//                      backlog cannot fill the stream for the others).
//   <model-token>      durable pull consumers per (pool, model), one per
//   <model-token>_batch priority class (queue/priority.h), explicit ack,
//                      AckWait and MaxDeliver from the model's profile.
//   SHOAL_DLQ          messages that exhausted MaxDeliver (dead letters).
//   shoal_models       KV: the catalog.
//   shoal_workers      KV: worker heartbeats, entries age out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "catalog/model_spec.h"
#include "common/status.h"
#include "queue/message.h"
#include "queue/nats.h"

namespace shoal::queue {

struct StreamLimits {
  int64_t max_msgs = 1'000'000;
  // Per model (per subject): what one model may have waiting or running.
  int64_t max_msgs_per_subject = 100'000;
  int64_t max_bytes = int64_t{1} << 30;
  int64_t max_age_ms = 3'600'000;
  bool memory_storage = false;  // file storage survives a nats-server restart
  // JetStream replicas (RAFT) of the stream: 3 (or 5) on a JetStream
  // cluster, so that the stream and its consumers survive losing a server.
  // 0 means "not asked": a new stream gets 1 and an existing one keeps its
  // own, so a process started without --replicas never scales a cluster's
  // streams down.
  int replicas = 0;
};

Result<JsCtxPtr> NewJetStream(natsConnection* nc);

// The gateways own the work streams' limits (`shoal gateway
// --max-queued-per-model`): EnsureWorkStream creates the stream or updates
// it to `limits`. Everyone else (workers, `shoal models add`) only makes
// sure it exists — creating it with `limits` when missing, leaving an
// existing one as it is — so that they do not undo the gateways' limits.
Status EnsureWorkStream(jsCtx* js, std::string_view pool, const StreamLimits& limits);
Status EnsureWorkStreamExists(jsCtx* js, std::string_view pool, const StreamLimits& limits);
Status EnsureConsumer(jsCtx* js, const ModelSpec& spec);     // both classes' consumers
Status EnsureDeadLetterStream(jsCtx* js, int replicas = 0);  // replicas as StreamLimits'

// A model's messages in its pool's work stream, per priority class.
struct WorkMessages {
  uint64_t interactive = 0;
  uint64_t batch = 0;
  uint64_t total() const { return interactive + batch; }
};
// Messages in a pool's work stream, per model id (models with none are
// absent). WorkQueue retention keeps a message until it is acked, so this is
// what waits plus what runs. One STREAM.INFO request with a subjects filter:
// how a worker sees demand for the models it has not loaded.
Result<std::map<std::string, WorkMessages>> WorkMessagesByModel(jsCtx* js, std::string_view pool);

// One message of a stream by its sequence number (NOT_FOUND once it is gone:
// acked, or taken by another).
Result<Message> GetStreamMessage(jsCtx* js, const std::string& stream, uint64_t seq);
// Stores `payload` on `subject` in whatever stream takes it, and waits for
// JetStream's acknowledgement.
Status StoreInStream(jsCtx* js, const std::string& subject, std::string_view payload);
Status DeleteStreamMessage(jsCtx* js, const std::string& stream, uint64_t seq);

// Opens a KV bucket, creating it if missing. `ttl_ms` 0 keeps entries forever.
// `replicas` applies when it creates the bucket (0: 1); an existing bucket is
// used as it is.
Result<KvStorePtr> OpenBucket(jsCtx* js, std::string_view bucket, int64_t ttl_ms, int replicas = 0);

// How long a heartbeat entry lives in shoal_workers when not rewritten.
inline constexpr int64_t kWorkerEntryTtlMs = 30'000;

}  // namespace shoal::queue
