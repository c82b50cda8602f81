#include "wire/transcode.h"

#include <simdjson.h>

#include "wire/json_writer.h"
#include "wire/msgpack_reader.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {
namespace {

constexpr int kMaxDepth = 64;

// `bytes`: whether binary values are taken (as base64 strings).
bool Value(MsgpackReader& r, JsonWriter& w, std::string* out, int depth, bool bytes) {
  if (depth > kMaxDepth) return false;
  switch (r.Peek()) {
    case MsgpackType::kNil: w.Null(); return r.ReadNil();
    case MsgpackType::kBool: { bool b; if (!r.ReadBool(&b)) return false; w.Bool(b); return true; }
    case MsgpackType::kInt: {
      int64_t i;
      if (r.ReadInt(&i)) { w.Int(i); return true; }
      double d;  // an unsigned value above INT64_MAX
      if (!r.ReadDouble(&d)) return false;
      w.Double(d);
      return true;
    }
    case MsgpackType::kFloat: {
      // float32 stays float32 so it prints in its own shortest form.
      const bool is_f32 = static_cast<unsigned char>(r.buffer()[r.offset()]) == 0xca;
      double d;
      if (!r.ReadDouble(&d)) return false;
      if (is_f32) w.Float(static_cast<float>(d)); else w.Double(d);
      return true;
    }
    case MsgpackType::kStr: { std::string_view s; if (!r.ReadStr(&s)) return false; w.String(s); return true; }
    case MsgpackType::kBin: {
      if (!bytes) return false;
      std::string_view b;
      if (!r.ReadBin(&b)) return false;
      out->push_back('"');
      AppendBase64(b, out);
      out->push_back('"');
      return true;
    }
    case MsgpackType::kArray: {
      uint32_t n;
      if (!r.ReadArrayHeader(&n)) return false;
      w.Char('[');
      for (uint32_t i = 0; i < n; ++i) {
        if (i) w.Char(',');
        if (!Value(r, w, out, depth + 1, bytes)) return false;
      }
      w.Char(']');
      return true;
    }
    case MsgpackType::kMap: {
      uint32_t n;
      if (!r.ReadMapHeader(&n)) return false;
      w.Char('{');
      for (uint32_t i = 0; i < n; ++i) {
        if (i) w.Char(',');
        std::string_view k;
        if (!r.ReadStr(&k)) return false;
        w.Key(k);
        if (!Value(r, w, out, depth + 1, bytes)) return false;
      }
      w.Char('}');
      return true;
    }
    default: return false;
  }
}

}  // namespace

Status MsgpackToJson(std::string_view msgpack, std::string* out) {
  MsgpackReader r(msgpack);
  JsonWriter w(out);
  if (!Value(r, w, out, 0, true) || !r.AtEnd()) {
    return Internal("a worker result is not valid MessagePack for JSON (at byte " +
                    std::to_string(r.offset()) + ")");
  }
  return Status::Ok();
}

Status MsgpackBodyToJson(std::string_view body, std::string* out) {
  if (body.empty()) return InvalidInput("body: empty");
  MsgpackReader r(body);
  JsonWriter w(out);
  if (!Value(r, w, out, 0, false)) {
    return InvalidInput("body: not MessagePack this route reads (at byte " + std::to_string(r.offset()) +
                        ": malformed, binary, an extension type or nested over 64 deep)");
  }
  if (!r.AtEnd()) return InvalidInput("body: trailing bytes after the request");
  return Status::Ok();
}

namespace {

void Pack(simdjson::dom::element e, MsgpackWriter& w) {
  switch (e.type()) {
    case simdjson::dom::element_type::ARRAY: {
      simdjson::dom::array a = e.get_array().value_unsafe();
      w.ArrayHeader(static_cast<uint32_t>(a.size()));
      for (simdjson::dom::element x : a) Pack(x, w);
      return;
    }
    case simdjson::dom::element_type::OBJECT: {
      simdjson::dom::object o = e.get_object().value_unsafe();
      w.MapHeader(static_cast<uint32_t>(o.size()));
      for (auto [k, v] : o) {
        w.Str(k);
        Pack(v, w);
      }
      return;
    }
    case simdjson::dom::element_type::INT64: w.Int(e.get_int64().value_unsafe()); return;
    case simdjson::dom::element_type::UINT64: w.Uint(e.get_uint64().value_unsafe()); return;
    case simdjson::dom::element_type::DOUBLE: w.Float64(e.get_double().value_unsafe()); return;
    case simdjson::dom::element_type::STRING: w.Str(e.get_string().value_unsafe()); return;
    case simdjson::dom::element_type::BOOL: w.Bool(e.get_bool().value_unsafe()); return;
    case simdjson::dom::element_type::NULL_VALUE: w.Nil(); return;
  }
}

}  // namespace

Status JsonToMsgpack(std::string_view json, std::string* out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto e = parser.parse(json.data(), json.size()).get(root)) {
    return Internal(std::string("a response is not valid JSON: ") + simdjson::error_message(e));
  }
  MsgpackWriter w(out);
  Pack(root, w);
  return Status::Ok();
}

}  // namespace shoal::wire
