// The messages that cross NATS between gateways and workers, typed: every
// producer and consumer writes and reads them here, and nothing else knows
// their layout.
//
// A message's payload is a header — one MessagePack map of the fields below
// — followed by its body. (Not NATS headers: those are a hash map per message
// in cnats, built on every publish and parsed on every read; this header is
// read in place, and the message goes out with one copy.) Readers skip keys
// they do not know, so a newer writer may add one; "v" changes only when a
// field changes meaning.
//
// Work (gateway → JetStream subject shoal.work.<pool>.<model-token>):
//   header  {"v": 1, "request": str, "item": uint, "cost": uint,
//            "deadline": Unix ms (absent: none), "reply": str, "task": str,
//            "truncate": true (absent: false), "normalize": false (absent:
//            true), "lora": str (absent: the base model),
//            "aggregation": str and "top_k": uint (extract; absent: the
//            model's default and all labels),
//            "outputs": uint (encode: OutputKind bits; absent: dense),
//            "input_type": "query" | "document" (encode; absent: unsaid),
//            "sparse_top_k": uint and "sparse_tokens": true (encode,
//            sparse; absent: every weight, no token strings),
//            "payload": str (the item waits in the payload store under
//            this key, queue/payload_store.h; the body is then empty),
//            "trace": str (a W3C traceparent: the request is traced, and
//            the worker's spans are children of the gateway's span it
//            names; absent: not traced)}
//   body    the item as MessagePack: {"text"} to encode or extract from;
//           {"text", "text_pair"} to score; {"text", "add_special_tokens"} to
//           tokenize; for generate, the request (wire/generate.h)
//   An adapter's items go to the base model's subject and consumer like the
//   base's own, and any worker holding the base runs them, adapters mixed in
//   one batch. No Nats-Msg-Id: a gateway republishes only items it has no
//   result for (a second result is ignored), and deduplication would cost
//   the server a lookup per message. When the item was queued is
//   JetStream's own stamp (in the ack subject), not a field.
//
// Reply (worker → core NATS, to the work's "reply"): a result or, for
// generation, a chunk of the stream.
//   header  {"v": 1, "item": uint, "worker": str, "attempt": uint
//            (JetStream's delivery count), "error": code name (absent: ok;
//            the body is then the message, UTF-8)}
//           results: "tokens", "truncated", "cold_start", "queue_us",
//            "inference_us", and "part"/"parts" for a result sent in parts
//            (each part repeats the header; the gateway joins the parts
//            of one attempt)
//           chunks: "seq" (0, 1, ... per attempt), "final": true on the
//            last, with "tokens" (generated) and "cold_start"
//   body    a result as MessagePack — encode {"dense": [float32...],
//           "sparse": {"indices", "values", "tokens"}, "multivector":
//           [[float32...]...]} (the outputs asked for), score
//           {"logits": [float32...]}, extract {"entities": [...]} or
//           {"labels": [...]} (wire/item.h), tokenize {"tokens": [{"id", "text",
//           "special", "start", "stop"}...]} (start/stop nil for added
//           special tokens) — or a chunk (wire/generate.h)
//
// The reply subject is _INBOX.<lane-id>.<request-seq>; JetStream's publish
// acknowledgement of item i comes back on <reply>.ack.<i>, so one
// subscription sees both and each acknowledgement names its item.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/task.h"
#include "common/status.h"

namespace shoal::wire {

inline constexpr uint64_t kMessageVersion = 1;
inline constexpr char kAckSuffix[] = ".ack.";  // then the item index

// Room a message keeps for its header: an item or result part carries at
// most the connection's max payload less this.
inline constexpr size_t kHeaderRoom = 4096;
// The most parts a result may come in (at 1 MB a part, 256 MB): a larger
// one is a PAYLOAD_TOO_LARGE error, not a gateway out of memory.
inline constexpr uint64_t kMaxResultParts = 256;

// A work message's header. Strings are views: into the message once read.
struct WorkHeader {
  std::string_view request_id;
  uint32_t item = 0;
  uint32_t cost = 1;              // estimated tokens (at least 1)
  int64_t deadline_unix_ms = 0;   // 0: none
  std::string_view reply;
  Task task = Task::kEncode;
  bool truncate = false;
  bool normalize = true;
  std::string_view lora;          // empty: the base model
  std::optional<Aggregation> aggregation;  // extract: how entities group (absent: the model's default)
  uint32_t top_k = 0;             // extract: the best k labels (0: all)
  OutputKinds outputs = 0;        // encode: what to produce (0: dense)
  InputRole role = InputRole::kUnspecified;  // encode: query or document
  uint32_t sparse_top_k = 0;      // encode, sparse: the k largest weights (0: all)
  bool sparse_tokens = false;     // encode, sparse: each index's vocabulary piece too
  std::string_view payload_key;   // non-empty: the body waits in the payload store
  std::string_view trace;         // non-empty: a traceparent (common/trace_context.h)
};

// Appends the header, then `body`.
void AppendWork(const WorkHeader& h, std::string_view body, std::string* out);
// Splits a work message into its header and body; INVALID_INPUT naming what
// is wrong (a worker trusts nothing on the queue).
Status ReadWork(std::string_view message, WorkHeader* h, std::string_view* body);

// A reply's header: a result, a chunk, or an error (`error` not kOk).
struct ReplyHeader {
  uint32_t item = 0;
  std::string_view worker;
  uint32_t attempt = 1;
  Code error = Code::kOk;
  // Results (and the final chunk: tokens, cold_start).
  uint32_t tokens = 0;
  bool truncated = false;
  bool cold_start = false;  // it waited for its model to load
  int64_t queue_us = 0;
  int64_t inference_us = 0;
  uint32_t part = 0;
  uint32_t parts = 0;  // 0: the whole result in this message
  // Chunks.
  uint64_t seq = 0;
  bool final = false;
};

// Appends the header; the body follows (the caller appends it, so a result
// is written once, straight after its header).
void AppendReplyHeader(const ReplyHeader& h, std::string* out);
// An error reply: its header and `error`'s message as the body.
void AppendErrorReply(uint32_t item, std::string_view worker, uint32_t attempt, const Status& error,
                      std::string* out);
Status ReadReply(std::string_view message, ReplyHeader* h, std::string_view* body);

// The payload-store key of item `index` of request `request_id`.
inline std::string PayloadKey(std::string_view request_id, size_t index) {
  return std::string(request_id) + "." + std::to_string(index);
}

}  // namespace shoal::wire
