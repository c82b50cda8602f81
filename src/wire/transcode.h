// MessagePack ↔ JSON at the gateway's edge: workers always answer in
// MessagePack, and clients that asked for JSON get it transcoded; the routes
// whose parsers and responses are JSON (score, rerank, tokenize) take and
// give MessagePack by transcoding too.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::wire {

// Appends the JSON form of the one MessagePack value in `msgpack`. Binary
// becomes a base64 string; map keys must be strings; extension types and
// nesting deeper than 64 are rejected (kInternal: results come from workers).
Status MsgpackToJson(std::string_view msgpack, std::string* out);

// A client's MessagePack body as JSON. INVALID_INPUT when it is not one
// MessagePack value, or holds binary or extension values (no JSON route
// takes bytes), or nests deeper than 64.
Status MsgpackBodyToJson(std::string_view body, std::string* out);

// Appends the MessagePack form of the JSON document `json` (a response the
// gateway wrote): integers stay integers, other numbers become float64.
// INTERNAL when it is not valid JSON.
Status JsonToMsgpack(std::string_view json, std::string* out);

}  // namespace shoal::wire
