#include "queue/object_store.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/base64.h"
#include "common/ids.h"
#include "common/sha256.h"

namespace shoal::queue {
namespace {

using nlohmann::json;

bool ValidBucket(std::string_view b) {
  return !b.empty() && std::all_of(b.begin(), b.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

std::string DigestOf(const Sha256::Digest& d) {
  return "SHA-256=" +
         EncodeBase64Url(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

struct JsSubOptionsFor {
  jsSubOptions so;
  explicit JsSubOptionsFor(const std::string& stream, uint64_t start_seq) {
    jsSubOptions_Init(&so);
    so.Stream = stream.c_str();
    so.Ordered = true;
    if (start_seq > 0) {
      so.Config.DeliverPolicy = js_DeliverByStartSequence;
      so.Config.OptStartSeq = start_seq;
    } else {
      so.Config.DeliverPolicy = js_DeliverAll;
    }
  }
};

}  // namespace

std::string ObjectInfo::ToJson() const {
  json o{{"name", name}, {"bucket", bucket}, {"nuid", nuid},
         {"size", size}, {"chunks", chunks}, {"digest", digest}};
  if (max_chunk_size > 0) o["options"] = json{{"max_chunk_size", max_chunk_size}};
  if (deleted) o["deleted"] = true;
  return o.dump();
}

Result<ObjectInfo> ParseObjectInfo(std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return InvalidInput("object info: not a JSON object");
  ObjectInfo info;
  auto string_field = [&](const char* field, std::string* out) -> Status {
    auto it = o.find(field);
    if (it == o.end()) return Status::Ok();
    if (!it->is_string())
      return InvalidInput(std::string("object info: ") + field + ": expected a string");
    *out = it->get<std::string>();
    return Status::Ok();
  };
  SHOAL_RETURN_IF_ERROR(string_field("name", &info.name));
  SHOAL_RETURN_IF_ERROR(string_field("bucket", &info.bucket));
  SHOAL_RETURN_IF_ERROR(string_field("nuid", &info.nuid));
  SHOAL_RETURN_IF_ERROR(string_field("digest", &info.digest));
  if (auto it = o.find("size"); it != o.end()) {
    if (!it->is_number_unsigned())
      return InvalidInput("object info: size: expected a whole number");
    info.size = it->get<uint64_t>();
  }
  if (auto it = o.find("chunks"); it != o.end()) {
    if (!it->is_number_unsigned())
      return InvalidInput("object info: chunks: expected a whole number");
    info.chunks = it->get<uint32_t>();
  }
  if (auto it = o.find("options"); it != o.end() && it->is_object()) {
    if (auto c = it->find("max_chunk_size"); c != it->end() && c->is_number_unsigned()) {
      info.max_chunk_size = c->get<uint32_t>();
    }
  }
  if (auto it = o.find("deleted"); it != o.end())
    info.deleted = it->is_boolean() && it->get<bool>();
  return info;
}

std::string ObjectDigestFromHex(std::string_view hex) {
  if (hex.size() != 64) return {};
  Sha256::Digest d{};
  for (size_t i = 0; i < 32; ++i) {
    int v = 0;
    for (char c : hex.substr(2 * i, 2)) {
      const int n = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (n < 0) return {};
      v = v * 16 + n;
    }
    d[i] = static_cast<unsigned char>(v);
  }
  return DigestOf(d);
}

ObjectStore::ObjectStore(jsCtx* js, std::string bucket)
    : js_(js), bucket_(std::move(bucket)), stream_("OBJ_" + bucket_) {}

std::string ObjectStore::ChunkSubject(std::string_view nuid) const {
  return "$O." + bucket_ + ".C." + std::string(nuid);
}

std::string ObjectStore::InfoSubject(std::string_view name) const {
  return "$O." + bucket_ + ".M." + EncodeBase64Url(name);
}

Result<std::unique_ptr<ObjectStore>> ObjectStore::Open(jsCtx* js, std::string bucket,
                                                       int replicas) {
  if (!ValidBucket(bucket))
    return InvalidInput("object store bucket '" + bucket + "': expected [A-Za-z0-9_-]+");
  std::unique_ptr<ObjectStore> store(new ObjectStore(js, std::move(bucket)));
  const std::string chunks = "$O." + store->bucket_ + ".C.>";
  const std::string infos = "$O." + store->bucket_ + ".M.>";
  const char* subjects[] = {chunks.c_str(), infos.c_str()};
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = store->stream_.c_str();
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 2;
  cfg.Storage = js_FileStorage;
  cfg.Discard = js_DiscardNew;
  cfg.AllowRollup = true;
  cfg.AllowDirect = true;
  cfg.Replicas = replicas;
  jsStreamInfo* si = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = AddStream(&si, js, &cfg, &code);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(si);
  } else if (code != JSStreamNameExistErr) {
    return FromJetStream(s, code, "object store stream " + store->stream_);
  }
  return store;
}

Status ObjectStore::PublishInfo(const ObjectInfo& info) {
  natsMsg* raw = nullptr;
  const std::string subject = InfoSubject(info.name);
  const std::string body = info.ToJson();
  SHOAL_RETURN_IF_ERROR(FromNats(
      natsMsg_Create(&raw, subject.c_str(), nullptr, body.data(), static_cast<int>(body.size())),
      "object info message"));
  MsgPtr msg(raw);
  SHOAL_RETURN_IF_ERROR(
      FromNats(natsMsgHeader_Set(msg.get(), "Nats-Rollup", "sub"), "object info header"));
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_PublishMsg(&ack, js_, msg.get(), nullptr, &code);
  jsPubAck_Destroy(ack);
  return s == NATS_OK ? Status::Ok() : FromJetStream(s, code, "storing the info of " + info.name);
}

Status ObjectStore::PurgeChunks(std::string_view nuid) {
  const std::string subject = ChunkSubject(nuid);
  jsOptions o;
  jsOptions_Init(&o);
  o.Stream.Purge.Subject = subject.c_str();
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_PurgeStream(js_, stream_.c_str(), &o, &code);
  return s == NATS_OK ? Status::Ok() : FromJetStream(s, code, "purging chunks " + subject);
}

Result<ObjectInfo> ObjectStore::Put(std::string_view name, const Source& source,
                                    const PutProgress& progress, uint32_t chunk_bytes) {
  if (name.empty()) return InvalidInput("an object needs a name");
  if (chunk_bytes == 0) return InvalidInput("chunks of 0 bytes");
  auto previous = Info(name);
  if (!previous.ok() && previous.status().code() != Code::kNotFound) return previous.status();

  ObjectInfo info;
  info.name = std::string(name);
  info.bucket = bucket_;
  info.nuid = RandomToken(22);
  info.max_chunk_size = chunk_bytes;
  const std::string subject = ChunkSubject(info.nuid);
  std::vector<char> buffer(chunk_bytes);
  Sha256 hash;
  auto fail = [&](Status s) {
    (void)PurgeChunks(info.nuid);  // best effort: nothing refers to them
    return s;
  };
  for (;;) {
    // A chunk is full unless the source has ended.
    size_t filled = 0;
    while (filled < chunk_bytes) {
      auto n = source(buffer.data() + filled, chunk_bytes - filled);
      if (!n.ok()) return fail(n.status());
      if (*n == 0) break;
      filled += *n;
    }
    if (filled == 0) break;
    jsPubAck* ack = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    const natsStatus s = js_Publish(&ack, js_, subject.c_str(), buffer.data(),
                                    static_cast<int>(filled), nullptr, &code);
    jsPubAck_Destroy(ack);
    if (s != NATS_OK)
      return fail(
          FromJetStream(s, code, "storing chunk " + std::to_string(info.chunks) + " of " + info.name));
    hash.Update(std::string_view(buffer.data(), filled));
    info.size += filled;
    ++info.chunks;
    if (progress) progress(info.size);
    if (filled < chunk_bytes) break;
  }
  info.digest = DigestOf(hash.Finish());
  if (Status s = PublishInfo(info); !s.ok()) return fail(s);
  if (previous.ok() && previous->nuid != info.nuid)
    SHOAL_RETURN_IF_ERROR(PurgeChunks(previous->nuid));
  return info;
}

Result<ObjectInfo> ObjectStore::PutBytes(std::string_view name, std::string_view bytes) {
  size_t at = 0;
  return Put(name, [&](char* buffer, size_t capacity) -> Result<size_t> {
    const size_t n = std::min(capacity, bytes.size() - at);
    std::copy_n(bytes.data() + at, n, buffer);
    at += n;
    return n;
  });
}

Result<ObjectInfo> ObjectStore::Info(std::string_view name) {
  const std::string subject = InfoSubject(name);
  natsMsg* raw = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetLastMsg(&raw, js_, stream_.c_str(), subject.c_str(), nullptr, &code);
  MsgPtr msg(raw);
  if (s != NATS_OK) {
    if (code == JSNoMessageFoundErr || s == NATS_NOT_FOUND) {
      return Status(Code::kNotFound, "no object '" + std::string(name) + "' in " + bucket_);
    }
    return FromJetStream(s, code, "reading the info of " + std::string(name));
  }
  auto info = ParseObjectInfo(
      std::string_view(natsMsg_GetData(msg.get()), natsMsg_GetDataLength(msg.get())));
  if (!info.ok()) return Status(Code::kInternal, info.status().message());
  if (info->deleted)
    return Status(Code::kNotFound,
                  "object '" + std::string(name) + "' was deleted from " + bucket_);
  return info;
}

Status ObjectStore::Read(const ObjectInfo& info, const ChunkSink& sink, ReadPosition from,
                         int stall_ms) {
  if (from.chunks >= info.chunks) {
    return from.bytes == info.size ? Status::Ok()
                                   : Status(Code::kInternal, info.name + ": read past its end");
  }
  const std::string subject = ChunkSubject(info.nuid);
  JsSubOptionsFor options(stream_, from.next_seq);
  natsSubscription* raw = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s = js_SubscribeSync(&raw, js_, subject.c_str(), nullptr, &options.so, &code);
  if (s != NATS_OK) return FromJetStream(s, code, "reading " + info.name);
  SubscriptionPtr sub(raw);
  // Unsubscribed before it is destroyed, so that no chunk still on its way
  // reaches a freed subscription (cnats' reader thread would).
  struct Unsubscriber {
    natsSubscription* s;
    ~Unsubscriber() { natsSubscription_Unsubscribe(s); }
  } unsubscribe{sub.get()};
  // The server may run ahead of the disk: room for the whole object.
  natsSubscription_SetPendingLimits(sub.get(), -1, -1);
  ReadPosition at = from;
  while (at.chunks < info.chunks) {
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, sub.get(), stall_ms);
    MsgPtr msg(m);
    if (s == NATS_TIMEOUT) {
      return Status(Code::kNoCapacity, info.name + ": the object store sent nothing for " +
                                           std::to_string(stall_ms) + " ms (chunk " +
                                           std::to_string(at.chunks) + " of " +
                                           std::to_string(info.chunks) + ")");
    }
    if (s != NATS_OK) return FromNats(s, "reading " + info.name);
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, msg.get()) != NATS_OK) continue;  // not a stream message
    at.next_seq = meta->Sequence.Stream + 1;
    jsMsgMetaData_Destroy(meta);
    const std::string_view chunk(natsMsg_GetData(msg.get()), natsMsg_GetDataLength(msg.get()));
    at.bytes += chunk.size();
    ++at.chunks;
    if (at.bytes > info.size)
      return Status(Code::kInternal, info.name + ": more bytes than its info says");
    SHOAL_RETURN_IF_ERROR(sink(chunk, at));
  }
  if (at.bytes != info.size) {
    return Status(Code::kInternal, info.name + ": its chunks hold " + std::to_string(at.bytes) +
                                       " bytes, not " + std::to_string(info.size));
  }
  return Status::Ok();
}

Result<std::string> ObjectStore::Get(std::string_view name) {
  SHOAL_ASSIGN_OR_RETURN(ObjectInfo info, Info(name));
  std::string bytes;
  bytes.reserve(info.size);
  Sha256 hash;
  SHOAL_RETURN_IF_ERROR(Read(info, [&](std::string_view chunk, const ReadPosition&) {
    bytes.append(chunk);
    hash.Update(chunk);
    return Status::Ok();
  }));
  if (DigestOf(hash.Finish()) != info.digest) {
    return Status(Code::kInternal, "object '" + info.name + "': its bytes do not match its digest");
  }
  return bytes;
}

Status ObjectStore::Delete(std::string_view name) {
  SHOAL_ASSIGN_OR_RETURN(ObjectInfo info, Info(name));
  ObjectInfo gone = info;
  gone.deleted = true;
  gone.size = 0;
  gone.chunks = 0;
  gone.digest.clear();
  SHOAL_RETURN_IF_ERROR(PublishInfo(gone));
  return PurgeChunks(info.nuid);
}

}  // namespace shoal::queue
