// Requests in flight at one gateway lane, waiting for their items' results.
//
// A PendingRequest owns its body (the MessagePack items are views into it)
// and one result slot per item. It finishes exactly once — with its response,
// an error result from a worker, a failed publish, its deadline, or shutdown —
// and whoever finishes it calls the http::Responder and removes it from the table.
//
// A generation request (p.generation set, gateway/generation.h) has an item per output
// and may stream its response: Send gives the client the head and then parts
// while the request stays pending; Finish gives the last part. Once the head
// is out the status line is spent, so an error that finishes a streaming
// request goes out as an SSE error event ending the stream.
//
// Threading: a PendingTable and its requests belong to one lane and are used
// on that lane's loop thread only; size() alone may be read from anywhere.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/trace_context.h"
#include "catalog/model_spec.h"
#include "gateway/generation.h"
#include "http/http.h"
#include "queue/message.h"
#include "queue/priority.h"
#include "wire/encode_request.h"

namespace shoal::gateway {

class ShadowPair;

// How a request's results become a response body.
enum class ResponseFormat {
  kMsgpack,   // native encode and extract
  kJson,      // native encode and extract
  kOpenAi,    // OpenAI embeddings
  kCohereEmbed,  // Cohere embed, v1 or v2 (request.cohere.version)
  kScore,     // native score
  kRerank,    // Cohere rerank
  kTokenize,  // TEI-style tokenize
};

struct ItemResult {
  bool filled = false;
  // Pull path: JetStream acknowledged storing its work message as last
  // published; when it was last published (unacknowledged ones are published
  // again), and since when it has waited for an acknowledgement.
  bool stored = false;
  SteadyClock::time_point published_at{};
  SteadyClock::time_point unstored_since{};
  // Copies also sent straight to workers (QueueDispatcher's hedging), the
  // last when.
  uint32_t hedges = 0;
  SteadyClock::time_point hedged_at{};
  // The result's MessagePack, once filled: a view into `message` (the reply
  // as it arrived, kept rather than copied) or into `owned` (a result joined
  // from parts, or made in-process).
  std::string_view payload;
  queue::Message message;
  std::string owned;
  // A result sent in parts (wire/work_message.h): those of `parts_attempt`
  // received so far, joined into `owned` when all are in.
  std::vector<std::string> parts;
  size_t parts_received = 0;
  uint32_t parts_attempt = 0;
  uint32_t tokens = 0;
  bool truncated = false;
  bool cold_start = false;  // waited for its model to load
  int64_t queue_us = 0;
  int64_t inference_us = 0;
  uint32_t attempt = 1;  // JetStream deliveries it took
};

struct PendingRequest {
  uint64_t seq = 0;     // unique within its lane
  std::string id;       // <lane-id>-<seq>, given to the client
  std::shared_ptr<const ModelSpec> model;
  std::string body;     // owns the bytes `request.items` may point into
  wire::WorkRequest request;
  ResponseFormat format = ResponseFormat::kMsgpack;
  // A JSON-bodied format (score, rerank, tokenize) the client wants as
  // MessagePack: the body is transcoded once written.
  bool msgpack_response = false;
  SteadyClock::time_point received;
  // Its class on the shared queue (X-Shoal-Priority, or its key's default).
  queue::Priority priority = queue::Priority::kInteractive;
  SteadyClock::time_point deadline;
  int64_t deadline_unix_ms = 0;
  http::Responder respond;

  std::vector<ItemResult> results;  // one per item; never resized once filled (views point into them)
  size_t remaining = 0;
  bool published = false;  // its items went out (QueueDispatcher)
  bool finished = false;

  std::unique_ptr<Generation> generation;  // generation requests only
  bool streaming = false;                  // the head of a streamed response went out

  // A traced request (trace.valid()): the gateway's span for it (the parent
  // of its work's spans), and when each stage ended (request_tracer.h).
  TraceContext trace;
  SteadyClock::time_point submitted_at{};   // parsed and admitted: to the dispatcher
  SteadyClock::time_point offloaded_at{};   // its payloads stored (offloaded items only)
  SteadyClock::time_point waited_from{};    // no worker served its model yet (if so)
  SteadyClock::time_point published_at{};   // its items went to the queue
  SteadyClock::time_point results_in_at{};  // its last result arrived

  // A request for an id with a canary (catalog/model_spec.h CanarySpec):
  // the id, the canary, and whether it went to the canary's version (a
  // shadow's copy: it is the copy).
  std::string canary_of;
  CanarySpec canary;
  bool on_canary = false;
  // A shadowed request and its copy share the pair that compares their
  // answers (shadow_request.h); `shadowed`: this request is to be copied.
  bool shadowed = false;
  std::shared_ptr<ShadowPair> shadow;
  int status = 0;  // its response's, once finished
};

// The model as a response names it: its id, or "base:lora" under an adapter.
inline std::string ResponseModel(const PendingRequest& p) {
  return p.request.lora.empty() ? p.model->id : p.model->id + ":" + p.request.lora;
}

// X-Shoal-Model-Version: the version of its model that answered
// (catalog/model_version.h), where the catalog numbers it.
inline void AddModelVersionHeader(const PendingRequest& p, http::Response* res) {
  if (p.model && p.model->version != 0) res->headers.emplace_back("X-Shoal-Model-Version", std::to_string(p.model->version));
}

class PendingTable {
 public:
  void Insert(const std::shared_ptr<PendingRequest>& p);
  std::shared_ptr<PendingRequest> Find(uint64_t seq) const;
  size_t size() const { return size_.load(std::memory_order_relaxed); }

  // Finishes `p` with `response` unless it is finished; returns whether
  // this call did. When `p` is streaming, a success response is the last
  // part (its body), and an error response becomes an SSE event
  // `data: {"error":{...}}` that ends the stream.
  bool Finish(PendingRequest& p, http::Response response);

  // Streams a part of `p`'s response (http::Response::more is set here): the
  // first call sends the head with `part`'s status, type and headers, later
  // ones only the body. Does nothing once `p` is finished.
  void Send(PendingRequest& p, http::Response part);

  // Requests whose deadline is at or before `now`.
  std::vector<std::shared_ptr<PendingRequest>> Expired(SteadyClock::time_point now) const;
  std::vector<std::shared_ptr<PendingRequest>> All() const { return Expired(SteadyClock::time_point::max()); }

  // Called for every request as it finishes, after its response: what a
  // request holds outside the gateway (its offloaded payloads) ends with it.
  void set_on_finish(std::function<void(const PendingRequest&)> fn) { on_finish_ = std::move(fn); }

  // Replies no request keeps, and those of finished requests, are freed in
  // batches (cnats wakes a thread per freed message): Free queues one,
  // Reap (from the lane's sweep) frees what is queued.
  void Free(queue::Message msg) { reaper_.Add(msg.release()); }
  void Reap() { reaper_.Reap(); }

 private:
  std::function<void(const PendingRequest&)> on_finish_;
  queue::MsgReaper reaper_;
  std::unordered_map<uint64_t, std::shared_ptr<PendingRequest>> map_;
  std::atomic<size_t> size_{0};
};

}  // namespace shoal::gateway
