// The work and result messages that cross JetStream and core NATS.
//
// Work (gateway → JetStream subject shoal.work.<pool>.<model-token>):
//   payload  one item as MessagePack: {"text": str}
//   headers  Shoal-Request-Id, Shoal-Item, Shoal-Cost, Shoal-Deadline,
//            Shoal-Reply, Shoal-Task; Shoal-Truncate / Shoal-Normalize only
//            when not the default. No Nats-Msg-Id: a gateway never republishes,
//            and deduplication would cost the server a lookup per message.
//            When the item was queued is JetStream's own stamp (in the ack
//            subject), not a header.
// Result (worker → core NATS, to the work message's Shoal-Reply subject):
//   payload  MessagePack: {"dense": [float32...]} on success, the error
//            message (UTF-8 text) on failure
//   headers  Shoal-Item, Shoal-Tokens, Shoal-Queue-Us, Shoal-Inference-Us,
//            Shoal-Worker, Shoal-Attempt (JetStream's delivery count: above 1
//            after a redelivery), and Shoal-Error (an API code name) on failure.
// The reply subject is _INBOX.<gateway-id>.<request-seq>; JetStream's publish
// acknowledgements come back on <reply>.ack so one subscription sees both.
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

inline constexpr char kHeaderTokens[] = "Shoal-Tokens";
inline constexpr char kHeaderQueueUs[] = "Shoal-Queue-Us";
inline constexpr char kHeaderInferenceUs[] = "Shoal-Inference-Us";
inline constexpr char kHeaderWorker[] = "Shoal-Worker";
inline constexpr char kHeaderAttempt[] = "Shoal-Attempt";
inline constexpr char kHeaderError[] = "Shoal-Error";

inline constexpr char kAckSuffix[] = ".ack";

// {"text": text} as MessagePack, appended to `out`.
void AppendTextItem(std::string_view text, std::string* out);

// Reads {"text": str} (the only field); errors name the field.
Status DecodeTextItem(std::string_view msgpack, std::string_view* text);

// {"dense": [v...]} as MessagePack (float32 elements), appended to `out`.
void AppendDenseResult(const float* v, size_t n, std::string* out);

// Finds the "dense" array of a result and calls `each` per element.
template <class Fn>
Status ForEachDense(std::string_view msgpack, Fn&& each);

// Parses a non-negative decimal header value; false on anything else.
bool ParseU64(std::string_view s, uint64_t* v);

}  // namespace shoal::wire

#include "wire/msgpack_reader.h"

namespace shoal::wire {

template <class Fn>
Status ForEachDense(std::string_view msgpack, Fn&& each) {
  MsgpackReader r(msgpack);
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return Internal("result: expected a map");
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return Internal("result: expected string keys");
    if (key != "dense") {
      if (!r.Skip()) return Internal("result: truncated");
      continue;
    }
    uint32_t n;
    if (!r.ReadArrayHeader(&n)) return Internal("result.dense: expected an array");
    for (uint32_t i = 0; i < n; ++i) {
      double d;
      if (!r.ReadDouble(&d)) return Internal("result.dense: expected numbers");
      each(static_cast<float>(d));
    }
    return Status::Ok();
  }
  return Internal("result: no dense vector");
}

}  // namespace shoal::wire
