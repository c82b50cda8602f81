// ObjectStore: a JetStream object-store bucket as NATS ADR-20 lays it out,
// written on cnats (whose 3.4 has none), so that any client that speaks
// ADR-20 — the nats CLI, nats.go — reads and writes the same objects:
//
//   stream   OBJ_<bucket>: subjects $O.<bucket>.C.> and $O.<bucket>.M.>,
//            roll-ups allowed, direct gets, discard new
//   chunks   $O.<bucket>.C.<nuid>: the object's bytes in order, at most
//            options.max_chunk_size each, one message per chunk
//   info     $O.<bucket>.M.<base64url(name)>: the ObjectInfo as JSON
//            (name, bucket, nuid, size, chunks, digest "SHA-256=<base64url>",
//            options, deleted), published with `Nats-Rollup: sub` so the
//            subject keeps only the latest
//
// Put writes the chunks, then the info, then purges the chunks of the
// version it replaced: a reader that found an info finds all its chunks.
// A put that fails half-way purges what it wrote.
//
// Read delivers an object's chunks through an ordered consumer from a
// position (a stream sequence and what came before it), so an interrupted
// read resumes where it stopped instead of starting over.
//
// Threading: thread-safe (cnats JetStream calls are); every call blocks on
// the server, so callers keep it off event loops.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "queue/nats.h"

namespace shoal::queue {

struct ObjectInfo {
  std::string name;
  std::string bucket;
  std::string nuid;   // names the chunk subject of this version
  uint64_t size = 0;  // bytes
  uint32_t chunks = 0;
  std::string digest;  // "SHA-256=<base64url of the 32 bytes>"
  uint32_t max_chunk_size = 0;
  bool deleted = false;

  std::string ToJson() const;
};
Result<ObjectInfo> ParseObjectInfo(std::string_view json);

// "SHA-256=<base64url>" of a digest given as lowercase hex; "" if not hex.
std::string ObjectDigestFromHex(std::string_view sha256_hex);

// Where a read is: the stream sequence of the next chunk to read (0: the
// first) and what the chunks before it held.
struct ReadPosition {
  uint64_t next_seq = 0;
  uint32_t chunks = 0;
  uint64_t bytes = 0;
};

class ObjectStore {
 public:
  static constexpr uint32_t kDefaultChunkBytes = 128 * 1024;  // ADR-20's default

  // Opens bucket `bucket` ([A-Za-z0-9_-]+), creating its stream when
  // missing. `replicas`: of a new stream (0: the server's default).
  static Result<std::unique_ptr<ObjectStore>> Open(jsCtx* js, std::string bucket, int replicas = 0);

  // Fills `buffer` with up to `capacity` bytes of the object; 0 at its end.
  using Source = std::function<Result<size_t>(char* buffer, size_t capacity)>;
  // Called after each chunk with the bytes stored so far.
  using PutProgress = std::function<void(uint64_t bytes)>;
  // Stores the bytes `source` gives as object `name` (replacing one of that
  // name) and returns its info.
  Result<ObjectInfo> Put(std::string_view name, const Source& source,
                         const PutProgress& progress = nullptr,
                         uint32_t chunk_bytes = kDefaultChunkBytes);
  Result<ObjectInfo> PutBytes(std::string_view name, std::string_view bytes);

  // NOT_FOUND when there is no such object, or it was deleted.
  Result<ObjectInfo> Info(std::string_view name);

  // Given each chunk and the position after it; an error stops the read and
  // is returned.
  using ChunkSink = std::function<Status(std::string_view chunk, const ReadPosition& after)>;
  // Reads the chunks of `info` from `from` (default: the first) to the
  // last. NO_CAPACITY when the server stops sending for `stall_ms`;
  // INTERNAL when the chunks do not add up to the info's size.
  Status Read(const ObjectInfo& info, const ChunkSink& sink, ReadPosition from = {},
              int stall_ms = 5000);
  // The whole object, its digest checked.
  Result<std::string> Get(std::string_view name);

  // Marks `name` deleted and purges its chunks (NOT_FOUND if absent).
  Status Delete(std::string_view name);

  const std::string& bucket() const { return bucket_; }
  const std::string& stream() const { return stream_; }

 private:
  ObjectStore(jsCtx* js, std::string bucket);
  std::string ChunkSubject(std::string_view nuid) const;
  std::string InfoSubject(std::string_view name) const;
  Status PublishInfo(const ObjectInfo& info);
  Status PurgeChunks(std::string_view nuid);

  jsCtx* js_;  // not owned
  std::string bucket_;
  std::string stream_;
};

}  // namespace shoal::queue
