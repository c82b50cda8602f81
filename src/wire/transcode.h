// MessagePack → JSON, for clients that asked for JSON: workers always answer
// in MessagePack and the gateway transcodes at the edge.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::wire {

// Appends the JSON form of the one MessagePack value in `msgpack`. Binary
// becomes a base64 string; map keys must be strings; extension types and
// nesting deeper than 64 are rejected (kInternal: results come from workers).
Status MsgpackToJson(std::string_view msgpack, std::string* out);

}  // namespace shoal::wire
