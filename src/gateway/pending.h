// Requests in flight at a gateway, waiting for their items' results.
//
// A PendingRequest owns its body (the MessagePack items are views into it)
// and one result slot per item. It finishes exactly once — with its response,
// an error result from a worker, a failed publish, or its deadline — and
// whoever finishes it calls the Responder and removes it from the table.
//
// Threading: slots are filled on the result collector's thread; deadlines
// fire on the gateway's sweeper thread; `mu` guards the slots, `finished`
// decides the one winner.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/model_spec.h"
#include "gateway/http.h"
#include "wire/encode_request.h"

namespace shoal::gateway {

enum class ResponseFormat { kMsgpack, kJson, kOpenAi };

struct ItemResult {
  bool filled = false;
  std::string payload;  // MessagePack from the worker
  uint32_t tokens = 0;
  int64_t queue_us = 0;
  int64_t inference_us = 0;
  uint32_t attempt = 1;  // JetStream deliveries it took
};

struct PendingRequest {
  uint64_t seq = 0;     // unique within this gateway
  std::string id;       // <gateway-id>-<seq>, given to the client
  std::shared_ptr<const ModelSpec> model;
  std::string body;     // owns the bytes `request.items` may point into
  wire::EncodeRequest request;
  ResponseFormat format = ResponseFormat::kMsgpack;
  SteadyClock::time_point received;
  SteadyClock::time_point deadline;
  int64_t deadline_unix_ms = 0;
  Responder respond;

  std::mutex mu;
  std::vector<ItemResult> results;  // guarded by mu
  size_t remaining = 0;             // guarded by mu
  std::atomic<bool> finished{false};
};

// In-flight requests by seq, sharded to keep the collector and the I/O
// threads off one lock. The sweeper finds expired requests by scanning the
// live ones: they are few (bounded by open connections), and a finished
// request leaves nothing behind.
class PendingTable {
 public:
  void Insert(const std::shared_ptr<PendingRequest>& p);
  std::shared_ptr<PendingRequest> Find(uint64_t seq) const;
  size_t size() const { return size_.load(std::memory_order_relaxed); }

  // Finishes `p` with `response` if nobody has; returns whether this call did.
  bool Finish(PendingRequest& p, HttpResponse response);

  // Requests whose deadline has passed (and are not finished).
  std::vector<std::shared_ptr<PendingRequest>> Expired(SteadyClock::time_point now);

  // Drops every request without answering (shutdown, after draining).
  void Clear();

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<uint64_t, std::shared_ptr<PendingRequest>> map;
  };
  Shard& ShardFor(uint64_t seq) const { return shards_[seq % kShards]; }
  void Erase(uint64_t seq);

  mutable Shard shards_[kShards];
  std::atomic<size_t> size_{0};
};

}  // namespace shoal::gateway
