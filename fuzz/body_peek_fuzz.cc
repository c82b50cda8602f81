// What reads MessagePack that crossed a process boundary: the reader itself
// (wire/msgpack_reader.h, walked value by value with Skip/ReadRaw and the
// typed reads), the messages on the queue (work_message.h: a work message
// and a reply read, written again and read the same), the item decoder a
// worker runs on queued items (item.h: DecodeItem for each task), the
// generation request and chunk decoders (generate.h, each round-tripped),
// the result reader (ForEachDense) and the MessagePack → JSON transcoder
// (transcode.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "wire/generate.h"
#include "wire/item.h"
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

  // The queue's messages: what reads, writes back to what reads the same.
  {
    WorkHeader h, again;
    std::string_view body, body_again;
    if (ReadWork(buf, &h, &body).ok()) {
      FUZZ_CHECK(body.data() + body.size() == buf.data() + buf.size());
      std::string written;
      AppendWork(h, body, &written);
      FUZZ_CHECK(ReadWork(written, &again, &body_again).ok());
      FUZZ_CHECK(again.request_id == h.request_id && again.reply == h.reply && again.item == h.item &&
                 again.cost == h.cost && again.task == h.task && again.lora == h.lora &&
                 again.payload_key == h.payload_key && again.deadline_unix_ms == std::max<int64_t>(h.deadline_unix_ms, 0) &&
                 body_again == body);
    }
    ReplyHeader r, r_again;
    if (ReadReply(buf, &r, &body).ok()) {
      std::string written;
      AppendReplyHeader(r, &written);
      written.append(body);
      FUZZ_CHECK(ReadReply(written, &r_again, &body_again).ok());
      FUZZ_CHECK(r_again.item == r.item && r_again.worker == r.worker && r_again.error == r.error &&
                 r_again.tokens == r.tokens && r_again.seq == r.seq && r_again.final == r.final &&
                 r_again.parts == r.parts && (r.parts == 0 || r_again.part == r.part) && body_again == body);
    }
  }
  {
    GenerateRequest g, g_again;
    if (DecodeGenerateWork(buf, &g).ok()) {
      std::string written;
      AppendGenerateWork(g, &written);
      FUZZ_CHECK(DecodeGenerateWork(written, &g_again).ok());
      FUZZ_CHECK(g_again.kind == g.kind && g_again.model == g.model && g_again.prompt == g.prompt &&
                 g_again.messages.size() == g.messages.size() && g_again.sampling.seed == g.sampling.seed &&
                 g_again.sampling.stop == g.sampling.stop && g_again.stream == g.stream);
    }
    GenerationChunk c, c_again;
    if (DecodeChunk(buf, &c).ok()) {
      std::string written;
      AppendChunk(c, &written);
      FUZZ_CHECK(DecodeChunk(written, &c_again).ok());
      FUZZ_CHECK(c_again.text == c.text && c_again.token_ids == c.token_ids && c_again.finish == c.finish);
    }
  }

  // An item's views lie inside it (text, or an image or a document instead).
  auto inside = [&](std::string_view v) {
    return v.empty() || (v.data() >= buf.data() && v.data() + v.size() <= buf.data() + buf.size());
  };
  for (shoal::Task task : {shoal::Task::kEncode, shoal::Task::kScore, shoal::Task::kExtract, shoal::Task::kTokenize}) {
    ItemFields f;
    if (DecodeItem(buf, task, &f).ok()) {
      FUZZ_CHECK(inside(f.text) && inside(f.text_pair) && inside(f.image) && inside(f.document) && inside(f.pages));
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
