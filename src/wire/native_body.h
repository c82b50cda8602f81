// The body the native item routes share (POST /v1/encode/{model},
// /v1/extract/{model}), MessagePack or JSON:
//   {"items": [{"text": "..."} | {"image": <bytes>} | {"document": <bytes>, "pages": "1-3"}, ...],
//    "truncate": false, "lora": "adapter", ...the route's own fields}
// (an image or a document is MessagePack bin, or in JSON base64 or a base64
// data URL; its cost is kImageItemCost; a document is an extract item, which
// the worker refuses on encode)
// The route reads its own fields through `other`, which refuses the ones it
// does not know (UnknownField). A MessagePack item is kept as a view into
// the body; a JSON item is re-encoded once. Internal to src/wire.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "wire/encode_request.h"
#include "wire/msgpack_reader.h"
#include "wire/request_json.h"

namespace shoal::wire {

// INVALID_INPUT "body: unknown field 'x'".
Status UnknownField(std::string_view key);

using MsgpackField = std::function<Status(std::string_view key, MsgpackReader& r)>;
Status ParseNativeMsgpack(std::string_view body, const ParseLimits& limits, WorkRequest* out,
                          const MsgpackField& other);

using JsonField = std::function<Status(std::string_view key, od::value v)>;
Status ParseNativeJson(std::string& body, const ParseLimits& limits, WorkRequest* out, const JsonField& other);

}  // namespace shoal::wire
