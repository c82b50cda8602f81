// The envelopes of the runtime protocol's messages (docs/runtime-protocol.md
// "Messages"), for the files that write them (protocol_requests.cc,
// protocol_replies.cc, protocol_generate.cc): a request is
// {"op": op, "id": id, ...}, a reply {"id": id, <kind>: value}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "wire/msgpack_writer.h"

namespace shoal::runtime_process {

// {"op": op, "id": id, ...`fields` more pairs written by the caller}.
inline wire::MsgpackWriter RequestEnvelope(std::string* out, std::string_view op, uint64_t id, uint32_t fields) {
  wire::MsgpackWriter w(out);
  w.MapHeader(2 + fields);
  w.Str("op");
  w.Str(op);
  w.Str("id");
  w.Uint(id);
  return w;
}

// {"id": id, kind: <the caller writes the value>}: kind is "ok", "chunk" or
// "progress".
inline wire::MsgpackWriter ReplyEnvelope(std::string* out, uint64_t id, std::string_view kind) {
  wire::MsgpackWriter w(out);
  w.MapHeader(2);
  w.Str("id");
  w.Uint(id);
  w.Str(kind);
  return w;
}

}  // namespace shoal::runtime_process
