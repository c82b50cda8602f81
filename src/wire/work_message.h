// The work and result messages that cross JetStream and core NATS.
//
// Work (gateway → JetStream subject shoal.work.<pool>.<model-token>):
//   payload  one item as MessagePack: {"text": str} to encode; plus
//            "text_pair": str to score a (query, document) pair;
//            {"text": str, "add_special_tokens": bool} to tokenize
//   headers  Shoal-Request-Id, Shoal-Item, Shoal-Cost, Shoal-Deadline,
//            Shoal-Reply, Shoal-Task; Shoal-Truncate / Shoal-Normalize only
//            when not the default; Shoal-Lora only when the request selects
//            a LoRA adapter of the model (its name, as in the model's spec
//            `loras`; absent: the base model). An adapter's items go to
//            the base model's subject and consumer like the base's own, and
//            any worker holding the base runs them, adapters mixed in one
//            batch. No Nats-Msg-Id: a gateway republishes only
//            after its connection reconnects (a second result for an item
//            is ignored), and deduplication would cost the server a lookup
//            per message.
//            When the item was queued is JetStream's own stamp (in the ack
//            subject), not a header. An item over the inline limit waits in
//            the payload store (queue/payload_store.h): the message is empty
//            and Shoal-Payload names the key of its bytes.
// Result (worker → core NATS, to the work message's Shoal-Reply subject):
//   payload  MessagePack on success — encode {"dense": [float32...]},
//            score {"logits": [float32...]}, tokenize {"tokens": [{"id",
//            "text", "special", "start", "stop"}...]} (start/stop nil for
//            added special tokens) — and the error message (UTF-8 text) on
//            failure
//   headers  Shoal-Item, Shoal-Tokens, Shoal-Truncated, Shoal-Queue-Us, Shoal-Inference-Us,
//            Shoal-Worker, Shoal-Attempt (JetStream's delivery count: above 1
//            after a redelivery), and Shoal-Error (an API code name) on failure.
//            A result larger than a NATS message goes out in parts, each
//            with every header plus Shoal-Part (0-based) and Shoal-Parts
//            (their count); the gateway joins the parts of one attempt.
// The reply subject is _INBOX.<gateway-id>.<request-seq>; JetStream's publish
// acknowledgement of item i comes back on <reply>.ack.<i>, so one
// subscription sees both and each acknowledgement names its item.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::wire {

inline constexpr char kHeaderRequestId[] = "Shoal-Request-Id";
inline constexpr char kHeaderItem[] = "Shoal-Item";
inline constexpr char kHeaderCost[] = "Shoal-Cost";
inline constexpr char kHeaderDeadline[] = "Shoal-Deadline";    // Unix ms
inline constexpr char kHeaderReply[] = "Shoal-Reply";
inline constexpr char kHeaderTask[] = "Shoal-Task";
inline constexpr char kHeaderTruncate[] = "Shoal-Truncate";    // "1" or absent
inline constexpr char kHeaderNormalize[] = "Shoal-Normalize";  // "0" or absent
inline constexpr char kHeaderPayload[] = "Shoal-Payload";      // payload-store key
inline constexpr char kHeaderLora[] = "Shoal-Lora";            // adapter name, or absent

inline constexpr char kHeaderTokens[] = "Shoal-Tokens";
inline constexpr char kHeaderTruncated[] = "Shoal-Truncated";  // "1" or absent
// "1" when the item waited for its model to load on the worker (a cold start).
inline constexpr char kHeaderColdStart[] = "Shoal-Cold-Start";
inline constexpr char kHeaderQueueUs[] = "Shoal-Queue-Us";
inline constexpr char kHeaderInferenceUs[] = "Shoal-Inference-Us";
inline constexpr char kHeaderWorker[] = "Shoal-Worker";
inline constexpr char kHeaderAttempt[] = "Shoal-Attempt";
inline constexpr char kHeaderError[] = "Shoal-Error";
inline constexpr char kHeaderPart[] = "Shoal-Part";
inline constexpr char kHeaderParts[] = "Shoal-Parts";

inline constexpr char kAckSuffix[] = ".ack.";  // then the item index

// Room a message keeps for its headers: an item or result part carries at
// most the connection's max payload less this.
inline constexpr size_t kHeaderRoom = 4096;
// The most parts a result may come in (at 1 MB a part, 256 MB): a larger
// one is a PAYLOAD_TOO_LARGE error, not a gateway out of memory.
inline constexpr uint64_t kMaxResultParts = 256;

// What a work message asks of the model (header Shoal-Task).
enum class Task { kEncode, kScore, kTokenize };
std::string_view TaskName(Task task);
bool ParseTask(std::string_view name, Task* task);

// An item's fields, as views into its MessagePack.
struct ItemFields {
  std::string_view text;
  std::string_view text_pair;  // score only
  bool add_special_tokens = true;  // tokenize only
};

// {"text": text} as MessagePack, appended to `out`.
void AppendTextItem(std::string_view text, std::string* out);
// {"text": text, "text_pair": pair}.
void AppendPairItem(std::string_view text, std::string_view pair, std::string* out);
// {"text": text, "add_special_tokens": add_special_tokens}.
void AppendTokenizeItem(std::string_view text, bool add_special_tokens, std::string* out);

// The payload-store key of item `index` of request `request_id`.
inline std::string PayloadKey(std::string_view request_id, size_t index) {
  return std::string(request_id) + "." + std::to_string(index);
}

// Reads an item; "text" is required, and what else may appear depends on the
// task. Errors name the field.
Status DecodeItem(std::string_view msgpack, Task task, ItemFields* out);

// DecodeItem for an encode item: just its text.
inline Status DecodeTextItem(std::string_view msgpack, std::string_view* text) {
  ItemFields f;
  SHOAL_RETURN_IF_ERROR(DecodeItem(msgpack, Task::kEncode, &f));
  *text = f.text;
  return Status::Ok();
}

// {"dense": [v...]} as MessagePack (float32 elements), appended to `out`.
void AppendDenseResult(const float* v, size_t n, std::string* out);
// {"logits": [v...]}.
void AppendLogitsResult(const float* v, size_t n, std::string* out);

struct TokenView {
  int32_t id;
  std::string_view text;
  bool special;
  bool has_offsets;
  uint32_t start, stop;
};
// {"tokens": [{"id", "text", "special", "start", "stop"}...]}.
template <class Tokens>
void AppendTokensResult(const Tokens& tokens, std::string* out);

// Finds the array `key` ("dense", "logits") of a result and calls `each` per
// element.
template <class Fn>
Status ForEachFloat(std::string_view msgpack, std::string_view key, Fn&& each);
template <class Fn>
Status ForEachDense(std::string_view msgpack, Fn&& each) {
  return ForEachFloat(msgpack, "dense", std::forward<Fn>(each));
}

}  // namespace shoal::wire

#include "wire/msgpack_reader.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {

template <class Tokens>
void AppendTokensResult(const Tokens& tokens, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("tokens");
  w.ArrayHeader(static_cast<uint32_t>(tokens.size()));
  for (const auto& t : tokens) {
    w.MapHeader(5);
    w.Str("id");
    w.Int(t.id);
    w.Str("text");
    w.Str(t.text);
    w.Str("special");
    w.Bool(t.special);
    w.Str("start");
    t.has_offsets ? w.Uint(t.start) : w.Nil();
    w.Str("stop");
    t.has_offsets ? w.Uint(t.stop) : w.Nil();
  }
}

template <class Fn>
Status ForEachFloat(std::string_view msgpack, std::string_view key_wanted, Fn&& each) {
  MsgpackReader r(msgpack);
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return Internal("result: expected a map");
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return Internal("result: expected string keys");
    if (key != key_wanted) {
      if (!r.Skip()) return Internal("result: truncated");
      continue;
    }
    uint32_t n;
    if (!r.ReadArrayHeader(&n)) return Internal("result." + std::string(key) + ": expected an array");
    for (uint32_t i = 0; i < n; ++i) {
      double d;
      if (!r.ReadDouble(&d)) return Internal("result." + std::string(key) + ": expected numbers");
      each(static_cast<float>(d));
    }
    return Status::Ok();
  }
  return Internal("result: no " + std::string(key_wanted));
}

}  // namespace shoal::wire
