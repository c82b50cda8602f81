#include "wire/transcode.h"

#include "wire/json_writer.h"
#include "wire/msgpack_reader.h"

namespace shoal::wire {
namespace {

constexpr int kMaxDepth = 64;

bool Value(MsgpackReader& r, JsonWriter& w, std::string* out, int depth) {
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
        if (!Value(r, w, out, depth + 1)) return false;
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
        if (!Value(r, w, out, depth + 1)) return false;
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
  if (!Value(r, w, out, 0) || !r.AtEnd()) {
    return Internal("a worker result is not valid MessagePack for JSON (at byte " +
                    std::to_string(r.offset()) + ")");
  }
  return Status::Ok();
}

}  // namespace shoal::wire
