#include "queue/topology.h"

#include <algorithm>
#include <string>

#include "queue/subjects.h"

namespace shoal::queue {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;

Status AddOrUpdateStream(jsCtx* js, jsStreamConfig* cfg) {
  jsStreamInfo* si = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s = AddStream(&si, js, cfg, &code);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(si);
    return Status::Ok();
  }
  if (code != JSStreamNameExistErr) return FromJetStream(s, code, std::string("stream ") + cfg->Name);
  if (cfg->Replicas == 0) {
    // Not asked (StreamLimits::replicas): keep the stream's own. nats-server
    // reads 0 as 1, which would scale a replicated stream down.
    s = js_GetStreamInfo(&si, js, cfg->Name, nullptr, &code);
    if (s != NATS_OK) return FromJetStream(s, code, std::string("stream info ") + cfg->Name);
    cfg->Replicas = si->Config->Replicas;
    jsStreamInfo_Destroy(si);
    si = nullptr;
  }
  s = js_UpdateStream(&si, js, cfg, nullptr, &code);
  if (s != NATS_OK) return FromJetStream(s, code, std::string("updating stream ") + cfg->Name);
  jsStreamInfo_Destroy(si);
  return Status::Ok();
}

// The work stream's configuration, with the strings it points to.
struct WorkStreamConfig {
  WorkStreamConfig(std::string_view pool, const StreamLimits& limits)
      : name(WorkStreamName(pool)), subject(WorkSubjectFilter(pool)) {
    subjects[0] = subject.c_str();
    jsStreamConfig_Init(&cfg);
    cfg.Name = name.c_str();
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Retention = js_WorkQueuePolicy;
    cfg.Storage = limits.memory_storage ? js_MemoryStorage : js_FileStorage;
    cfg.MaxMsgs = limits.max_msgs;
    cfg.MaxBytes = limits.max_bytes;
    cfg.MaxAge = limits.max_age_ms * kNsPerMs;
    cfg.Discard = js_DiscardNew;
    // Without DiscardNewPerSubject a model at its bound would silently lose
    // its oldest waiting request; with it the new one is refused and the
    // client hears 503 OVERLOADED (nats-server 2.9+).
    cfg.MaxMsgsPerSubject = limits.max_msgs_per_subject;
    cfg.DiscardNewPerSubject = limits.max_msgs_per_subject > 0;
    cfg.Duplicates = 120'000 * kNsPerMs;
    cfg.Replicas = limits.replicas;
  }
  WorkStreamConfig(const WorkStreamConfig&) = delete;
  WorkStreamConfig& operator=(const WorkStreamConfig&) = delete;

  std::string name, subject;
  const char* subjects[1];
  jsStreamConfig cfg;
};

}  // namespace

Result<JsCtxPtr> NewJetStream(natsConnection* nc) {
  jsOptions opts;
  jsOptions_Init(&opts);
  opts.Wait = 5000;
  jsCtx* js = nullptr;
  if (auto s = natsConnection_JetStream(&js, nc, &opts); s != NATS_OK) {
    return FromNats(s, "jetstream context");
  }
  return JsCtxPtr(js);
}

Status EnsureWorkStream(jsCtx* js, std::string_view pool, const StreamLimits& limits) {
  WorkStreamConfig c(pool, limits);
  return AddOrUpdateStream(js, &c.cfg);
}

Status EnsureWorkStreamExists(jsCtx* js, std::string_view pool, const StreamLimits& limits) {
  WorkStreamConfig c(pool, limits);
  jsStreamInfo* si = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = AddStream(&si, js, &c.cfg, &code);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(si);
    return Status::Ok();
  }
  if (code == JSStreamNameExistErr) return Status::Ok();  // someone's limits stand
  return FromJetStream(s, code, "stream " + c.name);
}

Status EnsureDeadLetterStream(jsCtx* js, int replicas) {
  const std::string name(kDeadLetterStream);
  const char* subjects[] = {"shoal.dlq.>"};
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name.c_str();
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_FileStorage;
  cfg.MaxMsgs = 100'000;
  cfg.MaxAge = int64_t{7} * 24 * 3600 * 1000 * kNsPerMs;
  cfg.Replicas = replicas;
  return AddOrUpdateStream(js, &cfg);
}

namespace {

Status EnsureClassConsumer(jsCtx* js, const ModelSpec& spec, Priority priority) {
  const std::string stream = WorkStreamName(spec.pool);
  const std::string durable = ConsumerName(spec.id, priority);
  const std::string filter = WorkSubject(spec.pool, spec.id, priority);
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = durable.c_str();
  cc.AckPolicy = js_AckExplicit;
  cc.AckWait = int64_t{spec.queue.ack_wait_ms} * kNsPerMs;
  cc.MaxDeliver = spec.queue.max_deliver;
  cc.FilterSubject = filter.c_str();
  cc.DeliverPolicy = js_DeliverAll;
  cc.MaxAckPending = 20'000;  // many workers each hold a few batches in flight
  cc.MaxWaiting = 512;        // outstanding pull requests, across workers
  jsConsumerInfo* ci = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s = js_AddConsumer(&ci, js, stream.c_str(), &cc, nullptr, &code);
  if (s == NATS_OK) {
    jsConsumerInfo_Destroy(ci);
    return Status::Ok();
  }
  if (code != JSConsumerNameExistErr && code != JSConsumerExistingActiveErr) {
    return FromJetStream(s, code, "consumer " + durable + " on " + stream);
  }
  s = js_UpdateConsumer(&ci, js, stream.c_str(), &cc, nullptr, &code);
  if (s != NATS_OK) return FromJetStream(s, code, "updating consumer " + durable);
  jsConsumerInfo_Destroy(ci);
  return Status::Ok();
}

}  // namespace

Status EnsureConsumer(jsCtx* js, const ModelSpec& spec) {
  SHOAL_RETURN_IF_ERROR(EnsureClassConsumer(js, spec, Priority::kInteractive));
  return EnsureClassConsumer(js, spec, Priority::kBatch);
}

Result<KvStorePtr> OpenBucket(jsCtx* js, std::string_view bucket, int64_t ttl_ms, int replicas) {
  const std::string name(bucket);
  kvConfig cfg;
  kvConfig_Init(&cfg);
  cfg.Bucket = name.c_str();
  cfg.History = 1;
  cfg.TTL = ttl_ms * kNsPerMs;  // cnats 3.4 passes TTL through as nanoseconds
  cfg.StorageType = js_FileStorage;
  cfg.Replicas = std::max(1, replicas);
  kvStore* kv = nullptr;
  natsStatus s = js_CreateKeyValue(&kv, js, &cfg);
  if (s != NATS_OK) {
    // Created by someone else with another configuration: use it as it is.
    if (js_KeyValue(&kv, js, name.c_str()) != NATS_OK) return FromNats(s, "kv bucket " + name);
  }
  return KvStorePtr(kv);
}

Result<std::map<std::string, WorkMessages>> WorkMessagesByModel(jsCtx* js, std::string_view pool) {
  const std::string stream = WorkStreamName(pool);
  const std::string filter = WorkSubjectFilter(pool);
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Info.SubjectsFilter = filter.c_str();
  o.Wait = 500;  // ms: the caller (a worker's keeper) must not stall on a slow server
  jsStreamInfo* info = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetStreamInfo(&info, js, stream.c_str(), &o, &jerr);
  if (s != NATS_OK) return FromNats(s, "stream info " + stream);
  std::map<std::string, WorkMessages> out;
  if (info->State.Subjects) {
    const std::string prefix = filter.substr(0, filter.size() - 1);  // without the '>'
    for (int i = 0; i < info->State.Subjects->Count; ++i) {
      const jsStreamStateSubject& sub = info->State.Subjects->List[i];
      std::string_view subject(sub.Subject);
      if (!subject.starts_with(prefix)) continue;
      const std::string_view tail = subject.substr(prefix.size());
      auto id = ModelIdFromWorkSubjectTail(tail);
      if (!id.ok()) continue;
      (tail == ModelToken(*id) ? out[*id].interactive : out[*id].batch) += sub.Msgs;
    }
  }
  jsStreamInfo_Destroy(info);
  return out;
}


Result<Message> GetStreamMessage(jsCtx* js, const std::string& stream, uint64_t seq) {
  natsMsg* raw = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetMsg(&raw, js, stream.c_str(), seq, nullptr, &code);
  if (s == NATS_NOT_FOUND || code == JSNoMessageFoundErr) {
    return Status(Code::kNotFound, stream + " has no message " + std::to_string(seq));
  }
  if (s != NATS_OK) return FromNats(s, "reading message " + std::to_string(seq) + " of " + stream);
  return Message(MsgPtr(raw));
}

Status StoreInStream(jsCtx* js, const std::string& subject, std::string_view payload) {
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_Publish(&ack, js, subject.c_str(), payload.data(), static_cast<int>(payload.size()), nullptr, &code);
  if (ack) jsPubAck_Destroy(ack);
  return FromNats(s, "storing a message on " + subject);
}

Status DeleteStreamMessage(jsCtx* js, const std::string& stream, uint64_t seq) {
  jsErrCode code = static_cast<jsErrCode>(0);
  return FromNats(js_DeleteMsg(js, stream.c_str(), seq, nullptr, &code),
                  "deleting message " + std::to_string(seq) + " of " + stream);
}

}  // namespace shoal::queue
