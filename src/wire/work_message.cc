#include "wire/work_message.h"

#include <charconv>

#include "wire/msgpack_writer.h"

namespace shoal::wire {

void AppendTextItem(std::string_view text, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("text");
  w.Str(text);
}

Status DecodeTextItem(std::string_view msgpack, std::string_view* text) {
  MsgpackReader r(msgpack);
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) {
    return InvalidInput(std::string("item: expected a map, got ") +
                        std::string(MsgpackTypeName(r.Peek())));
  }
  bool found = false;
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return InvalidInput("item: field names must be strings");
    if (key != "text") return InvalidInput("item: unknown field '" + std::string(key) + "'");
    if (!r.ReadStr(text)) {
      return InvalidInput(std::string("item.text: expected a string, got ") +
                          std::string(MsgpackTypeName(r.Peek())));
    }
    found = true;
  }
  if (!found) return InvalidInput("item.text: missing");
  if (!r.AtEnd()) return InvalidInput("item: trailing bytes after the item");
  return Status::Ok();
}

void AppendDenseResult(const float* v, size_t n, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("dense");
  w.Float32Array(v, n);
}

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace shoal::wire
