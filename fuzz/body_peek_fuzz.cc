// What reads MessagePack without a full decode: the reader itself
// (wire/msgpack_reader.h, walked value by value with Skip/ReadRaw and the
// typed reads), the item decoder a worker runs on queued items
// (work_message.h: DecodeItem for each task), the result reader
// (ForEachDense) and the MessagePack → JSON transcoder (transcode.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "wire/msgpack_reader.h"
#include "wire/transcode.h"
#include "wire/work_message.h"

namespace {

using shoal::wire::MsgpackReader;
using shoal::wire::MsgpackType;

// Reads one value with the typed reads, recursing into containers; a failed
// read must leave the reader where it was.
void Walk(MsgpackReader* r, int depth) {
  const size_t before = r->offset();
  const MsgpackType t = r->Peek();
  bool ok = false;
  switch (t) {
    case MsgpackType::kEnd:
    case MsgpackType::kInvalid:
      FUZZ_CHECK(!r->Skip());
      FUZZ_CHECK(r->offset() == before);
      return;
    case MsgpackType::kNil: ok = r->ReadNil(); break;
    case MsgpackType::kBool: { bool v; ok = r->ReadBool(&v); break; }
    case MsgpackType::kInt: {
      int64_t v;
      ok = r->ReadInt(&v);
      if (!ok) { double d; ok = r->ReadDouble(&d); }  // an unsigned value over int64
      break;
    }
    case MsgpackType::kFloat: { double v; ok = r->ReadDouble(&v); break; }
    case MsgpackType::kStr: {
      std::string_view v;
      ok = r->ReadStr(&v);
      if (ok) FUZZ_CHECK(v.data() >= r->buffer().data() && v.data() + v.size() <= r->buffer().data() + r->buffer().size());
      break;
    }
    case MsgpackType::kBin: { std::string_view v; ok = r->ReadBin(&v); break; }
    case MsgpackType::kExt: ok = r->Skip(); break;
    case MsgpackType::kArray:
    case MsgpackType::kMap: {
      uint32_t n = 0;
      ok = t == MsgpackType::kArray ? r->ReadArrayHeader(&n) : r->ReadMapHeader(&n);
      if (!ok) break;
      const uint64_t values = t == MsgpackType::kMap ? 2ull * n : n;
      for (uint64_t i = 0; i < values && !r->AtEnd(); ++i) {
        if (depth > 64) {
          if (!r->Skip()) return;
        } else {
          const size_t at = r->offset();
          Walk(r, depth + 1);
          if (r->offset() == at) return;  // could not read it: stop here
        }
      }
      return;
    }
  }
  if (!ok) FUZZ_CHECK(r->offset() == before);
  else FUZZ_CHECK(r->offset() > before);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::wire;
  const std::string_view buf(reinterpret_cast<const char*>(data), size);

  // Skip and ReadRaw agree, and never leave the buffer.
  {
    MsgpackReader a(buf), b(buf);
    while (!a.AtEnd()) {
      const size_t at = a.offset();
      std::string_view raw;
      const bool skipped = a.Skip();
      const bool read = b.ReadRaw(&raw);
      FUZZ_CHECK(skipped == read);
      if (!skipped) {
        FUZZ_CHECK(a.offset() == at);
        break;
      }
      FUZZ_CHECK(a.offset() == b.offset() && a.offset() <= buf.size());
      FUZZ_CHECK(raw.data() == buf.data() + at && raw.size() == a.offset() - at);
    }
  }
  {
    MsgpackReader r(buf);
    while (!r.AtEnd()) {
      const size_t at = r.offset();
      Walk(&r, 0);
      FUZZ_CHECK(r.offset() <= buf.size());
      if (r.offset() == at) break;
    }
  }

  for (Task task : {Task::kEncode, Task::kScore, Task::kTokenize}) {
    ItemFields f;
    if (DecodeItem(buf, task, &f).ok()) {
      FUZZ_CHECK(f.text.data() >= buf.data() && f.text.data() + f.text.size() <= buf.data() + buf.size());
    }
  }
  size_t n = 0;
  (void)ForEachDense(buf, [&](float) { ++n; });
  FUZZ_CHECK(n <= size);

  // A transcoded value is valid JSON (the client parses it).
  std::string json;
  if (MsgpackToJson(buf, &json).ok()) FUZZ_CHECK(nlohmann::json::accept(json));
  return 0;
}
