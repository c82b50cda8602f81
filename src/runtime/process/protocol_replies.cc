// The runtime protocol's replies (protocol.h): written by a runtime, read by
// Shoal. The requests are in protocol_requests.cc.
#include <cstring>

#include "runtime/process/protocol.h"
#include "runtime/process/protocol_envelopes.h"
#include "wire/item.h"
#include "wire/msgpack_fields.h"
#include "wire/msgpack_reader.h"
#include "wire/msgpack_writer.h"

namespace shoal::runtime_process {
namespace {

using wire::ForEachItem;
using wire::MsgpackFields;
using wire::MsgpackReader;
using wire::MsgpackWriter;

void WriteFloats(MsgpackWriter& w, const std::vector<float>& v) {
  // Little-endian float32, as this machine holds them.
  w.Bin(std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

Status ReadFloats(MsgpackFields& f, std::vector<float>* v) {
  std::string_view bin;
  if (!f.reader().ReadBin(&bin)) return f.Error("expected float32 values (bin)");
  if (bin.size() % sizeof(float) != 0) return f.Error("a bin of float32 values has " + std::to_string(bin.size()) + " bytes");
  v->resize(bin.size() / sizeof(float));
  if (!bin.empty()) std::memcpy(v->data(), bin.data(), bin.size());
  return Status::Ok();
}

// An item's "error" map, when it failed.
void WriteItemStatus(MsgpackWriter& w, const Status& s) {
  w.Str("error");
  w.MapHeader(2);
  w.Str("code");
  w.Str(CodeName(s.code()));
  w.Str("message");
  w.Str(s.message());
}

Status ReadStatusMap(MsgpackReader& r, const std::string& where, Status* s) {
  std::string code, message;
  MsgpackFields f(r, where);
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) {
    if (key == "code") return f.String(&code);
    if (key == "message") return f.String(&message);
    return f.Skip();
  }));
  if (code.empty() || code == "OK") return InvalidInput(where + ": an error needs a code");
  *s = Status(CodeFromName(code), std::move(message));
  return Status::Ok();
}

// The "items" array of an "ok" map, checked against the request's count.
Status OkItems(std::string_view ok, size_t want, std::string_view* items) {
  MsgpackReader r(ok);
  MsgpackFields f(r, "ok");
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) {
    if (key == "items") return f.reader().ReadRaw(items) ? Status::Ok() : f.Error("truncated");
    return f.Skip();
  }));
  MsgpackReader count(*items);
  uint32_t n = 0;
  if (!count.ReadArrayHeader(&n)) return Internal("the reply has no items array");
  if (n != want) {
    return Internal("the reply has " + std::to_string(n) + " items for a batch of " + std::to_string(want));
  }
  return Status::Ok();
}

// Encode and score results: a vector per item (`key`: "dense", "logits"),
// its token count and whether it was cut; or the item's error.
template <class Out>
std::string VectorReply(uint64_t id, std::span<const Out> items, std::string_view key,
                        std::vector<float> Out::*vector) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(1);
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(items.size()));
  for (const Out& o : items) {
    if (!o.status.ok()) {
      w.MapHeader(1);
      WriteItemStatus(w, o.status);
      continue;
    }
    w.MapHeader(3);
    w.Str(key);
    WriteFloats(w, o.*vector);
    w.Str("tokens");
    w.Uint(o.tokens);
    w.Str("truncated");
    w.Bool(o.truncated);
  }
  return out;
}

template <class Out>
Status ReadVectorOutputs(std::string_view ok, std::span<Out> out, std::string_view key,
                         std::vector<float> Out::*vector) {
  std::string_view items;
  SHOAL_RETURN_IF_ERROR(OkItems(ok, out.size(), &items));
  return ForEachItem(items, "items", [&](uint32_t i, MsgpackFields& f) -> Status {
    Out& o = out[i];
    return f.ForEach([&](std::string_view k) -> Status {
      if (k == "error") return ReadStatusMap(f.reader(), f.Name(), &o.status);
      if (k == key) return ReadFloats(f, &(o.*vector));
      if (k == "tokens") return f.Int(&o.tokens);
      if (k == "truncated") return f.Bool(&o.truncated);
      return f.Skip();
    });
  });
}

}  // namespace


Status ReadReply(std::string_view frame, Reply* reply) {
  MsgpackReader r(frame);
  MsgpackFields f(r, "reply");
  bool has_id = false, has_outcome = false;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "id") {
      has_id = true;
      return f.Int(&reply->id);
    }
    if (key == "ok") {
      has_outcome = true;
      reply->kind = Reply::Kind::kOk;
      if (r.Peek() != wire::MsgpackType::kMap) return f.Error("expected a map");
      return r.ReadRaw(&reply->ok) ? Status::Ok() : f.Error("truncated");
    }
    if (key == "error") {
      has_outcome = true;
      reply->kind = Reply::Kind::kError;
      return ReadStatusMap(r, "reply.error", &reply->error);
    }
    if (key == "progress") {
      has_outcome = true;
      reply->kind = Reply::Kind::kProgress;
      return f.Double(&reply->progress);
    }
    if (key == "chunk") {
      has_outcome = true;
      reply->kind = Reply::Kind::kChunk;
      if (r.Peek() != wire::MsgpackType::kMap) return f.Error("expected a map");
      return r.ReadRaw(&reply->chunk) ? Status::Ok() : f.Error("truncated");
    }
    return f.Skip();
  }));
  if (!has_id) return InvalidInput("reply: no id");
  if (!has_outcome) return InvalidInput("reply: none of ok, error, progress, chunk");
  return Status::Ok();
}

std::string ErrorReply(uint64_t id, const Status& error) {
  std::string out;
  MsgpackWriter w(&out);
  w.MapHeader(2);
  w.Str("id");
  w.Uint(id);
  WriteItemStatus(w, error.ok() ? Internal("an error without a code") : error);
  return out;
}

std::string ProgressReply(uint64_t id, double fraction) {
  std::string out;
  ReplyEnvelope(&out, id, "progress").Float64(fraction);
  return out;
}

std::string EmptyReply(uint64_t id) {
  std::string out;
  ReplyEnvelope(&out, id, "ok").MapHeader(0);
  return out;
}

std::string HelloReply(uint64_t id, const RuntimeHello& h) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(11);
  w.Str("protocol");
  w.Uint(h.protocol);
  w.Str("runtime");
  w.Str(h.runtime);
  w.Str("version");
  w.Str(h.version);
  w.Str("tasks");
  w.ArrayHeader(static_cast<uint32_t>(h.tasks.size()));
  for (Task t : h.tasks) w.Str(TaskName(t));
  w.Str("lora");
  w.Bool(h.lora);
  w.Str("memory_bytes");
  w.Uint(h.memory_bytes);
  w.Str("input");
  w.Str(h.takes_tokens ? "tokens" : "text");
  w.Str("formats");
  w.ArrayHeader(static_cast<uint32_t>(h.formats.size()));
  for (const std::string& f : h.formats) w.Str(f);
  w.Str("adjustments");
  w.ArrayHeader(static_cast<uint32_t>(h.adjustments.size()));
  for (const std::string& a : h.adjustments) w.Str(a);
  w.Str("counts_tokens");
  w.Bool(h.counts_tokens);
  w.Str("graphs");
  w.Bool(h.graphs);
  return out;
}

std::string BytesReply(uint64_t id, uint64_t memory_bytes) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(1);
  w.Str("memory_bytes");
  w.Uint(memory_bytes);
  return out;
}

std::string EncodeReply(uint64_t id, std::span<const EncodeOutput> out) {
  return VectorReply(id, out, "dense", &EncodeOutput::dense);
}

std::string ScoreReply(uint64_t id, std::span<const ScoreOutput> out) {
  return VectorReply(id, out, "logits", &ScoreOutput::logits);
}

std::string ExtractReply(uint64_t id, std::span<const ExtractOutput> out_items) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(1);
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(out_items.size()));
  for (const ExtractOutput& o : out_items) {
    if (!o.status.ok()) {
      w.MapHeader(1);
      WriteItemStatus(w, o.status);
      continue;
    }
    w.MapHeader(4);
    w.Str("entities");
    wire::WriteEntities(o.entities, w);
    w.Str("labels");
    wire::WriteLabels(o.labels, w);
    w.Str("tokens");
    w.Uint(o.tokens);
    w.Str("truncated");
    w.Bool(o.truncated);
  }
  return out;
}

std::string TokenizeReply(uint64_t id, std::span<const TokenizeOutput> out_items) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(1);
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(out_items.size()));
  for (const TokenizeOutput& t : out_items) {
    if (!t.status.ok()) {
      w.MapHeader(1);
      WriteItemStatus(w, t.status);
      continue;
    }
    w.MapHeader(1);
    w.Str("tokens");
    w.ArrayHeader(static_cast<uint32_t>(t.tokens.size()));
    for (const Token& k : t.tokens) {
      w.MapHeader(k.has_offsets ? 5 : 3);
      w.Str("id");
      w.Int(k.id);
      w.Str("text");
      w.Str(k.text);
      w.Str("special");
      w.Bool(k.special);
      if (k.has_offsets) {
        w.Str("start");
        w.Uint(k.start);
        w.Str("stop");
        w.Uint(k.stop);
      }
    }
  }
  return out;
}

std::string MemoryReply(uint64_t id, const MemoryReport& report) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(2);
  w.Str("rss_bytes");
  w.Uint(report.rss_bytes);
  w.Str("models");
  w.MapHeader(static_cast<uint32_t>(report.models.size()));
  for (const auto& [model, bytes] : report.models) {
    w.Str(model);
    w.Uint(bytes);
  }
  return out;
}

std::string HealthReply(uint64_t id, uint32_t models) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(1);
  w.Str("models");
  w.Uint(models);
  return out;
}

Status ReadHello(std::string_view ok, RuntimeHello* h) {
  MsgpackReader r(ok);
  MsgpackFields f(r, "hello");
  bool has_protocol = false;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "protocol") {
      has_protocol = true;
      return f.Int(&h->protocol);
    }
    if (key == "runtime") return f.String(&h->runtime);
    if (key == "version") return f.String(&h->version);
    if (key == "lora") return f.Bool(&h->lora);
    if (key == "memory_bytes") return f.Int(&h->memory_bytes);
    if (key == "formats") return f.Strings(&h->formats);
    if (key == "adjustments") return f.Strings(&h->adjustments);
    if (key == "counts_tokens") return f.Bool(&h->counts_tokens);
    if (key == "graphs") return f.Bool(&h->graphs);
    if (key == "input") {
      std::string_view input;
      SHOAL_RETURN_IF_ERROR(f.Str(&input));
      if (input != "text" && input != "tokens") return f.Error("expected \"text\" or \"tokens\"");
      h->takes_tokens = input == "tokens";
      return Status::Ok();
    }
    if (key == "tasks") {
      std::vector<std::string> names;
      SHOAL_RETURN_IF_ERROR(f.Strings(&names));
      for (const std::string& n : names) {
        Task t;
        if (!ParseTask(n, &t)) return f.Error("'" + n + "' is no task");
        h->tasks.push_back(t);
      }
      return Status::Ok();
    }
    return f.Skip();
  }));
  if (!has_protocol) return InvalidInput("hello: no protocol version");
  if (h->runtime.empty()) return InvalidInput("hello: no runtime name");
  return Status::Ok();
}

Status ReadLoadResult(std::string_view ok, LoadResult* result) {
  MsgpackReader r(ok);
  MsgpackFields f(r, "ok");
  bool has = false;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "memory_bytes") {
      has = true;
      return f.Int(&result->memory_bytes);
    }
    if (key == "max_tokens") return f.Int(&result->max_tokens);
    return f.Skip();
  }));
  return has ? Status::Ok() : InvalidInput("ok: no memory_bytes");
}

Status ReadBytes(std::string_view ok, uint64_t* memory_bytes) {
  LoadResult r;
  SHOAL_RETURN_IF_ERROR(ReadLoadResult(ok, &r));
  *memory_bytes = r.memory_bytes;
  return Status::Ok();
}

Status ReadEncodeOutputs(std::string_view ok, std::span<EncodeOutput> out) {
  return ReadVectorOutputs(ok, out, "dense", &EncodeOutput::dense);
}

Status ReadScoreOutputs(std::string_view ok, std::span<ScoreOutput> out) {
  return ReadVectorOutputs(ok, out, "logits", &ScoreOutput::logits);
}

Status ReadExtractOutputs(std::string_view ok, std::span<ExtractOutput> out) {
  std::string_view items;
  SHOAL_RETURN_IF_ERROR(OkItems(ok, out.size(), &items));
  return ForEachItem(items, "items", [&](uint32_t i, MsgpackFields& f) -> Status {
    ExtractOutput& o = out[i];
    return f.ForEach([&](std::string_view key) -> Status {
      if (key == "error") return ReadStatusMap(f.reader(), f.Name(), &o.status);
      if (key == "tokens") return f.Int(&o.tokens);
      if (key == "truncated") return f.Bool(&o.truncated);
      std::string_view list;
      if (key != "entities" && key != "labels") return f.Skip();
      if (!f.reader().ReadRaw(&list)) return f.Error("truncated");
      if (key == "labels") {
        return ForEachItem(list, f.Name(), [&](uint32_t, MsgpackFields& l) -> Status {
          LabelScore& label = o.labels.emplace_back();
          return l.ForEach([&](std::string_view name) -> Status {
            if (name == "label") return l.String(&label.label);
            if (name == "score") return l.Float(&label.score);
            return l.Skip();
          });
        });
      }
      return ForEachItem(list, f.Name(), [&](uint32_t, MsgpackFields& e) -> Status {
        Entity& entity = o.entities.emplace_back();
        return e.ForEach([&](std::string_view name) -> Status {
          if (name == "label") return e.String(&entity.label);
          if (name == "score") return e.Float(&entity.score);
          if (name == "start") return e.Int(&entity.start);
          if (name == "end") return e.Int(&entity.end);
          if (name == "text") return e.String(&entity.text);
          return e.Skip();
        });
      });
    });
  });
}

Status ReadTokenizeOutputs(std::string_view ok, std::span<TokenizeOutput> out) {
  std::string_view items;
  SHOAL_RETURN_IF_ERROR(OkItems(ok, out.size(), &items));
  return ForEachItem(items, "items", [&](uint32_t i, MsgpackFields& f) -> Status {
    TokenizeOutput& t = out[i];
    return f.ForEach([&](std::string_view key) -> Status {
      if (key == "error") return ReadStatusMap(f.reader(), f.Name(), &t.status);
      if (key != "tokens") return f.Skip();
      std::string_view tokens;
      if (!f.reader().ReadRaw(&tokens)) return f.Error("truncated");
      return ForEachItem(tokens, f.Name(), [&](uint32_t, MsgpackFields& k) -> Status {
        Token& token = t.tokens.emplace_back();
        return k.ForEach([&](std::string_view name) -> Status {
          if (name == "id") return k.Int(&token.id);
          if (name == "text") return k.String(&token.text);
          if (name == "special") return k.Bool(&token.special);
          if (name == "start") {
            token.has_offsets = true;
            return k.Int(&token.start);
          }
          if (name == "stop") return k.Int(&token.stop);
          return k.Skip();
        });
      });
    });
  });
}

Status ReadMemory(std::string_view ok, MemoryReport* report) {
  MsgpackReader r(ok);
  MsgpackFields f(r, "memory");
  return f.ForEach([&](std::string_view key) -> Status {
    if (key == "rss_bytes") return f.Int(&report->rss_bytes);
    if (key == "models") {
      MsgpackFields m(r, "memory.models");
      return m.ForEach([&](std::string_view model) -> Status {
        uint64_t bytes = 0;
        SHOAL_RETURN_IF_ERROR(m.Int(&bytes));
        report->models.emplace_back(std::string(model), bytes);
        return Status::Ok();
      });
    }
    return f.Skip();
  });
}

Status ReadHealth(std::string_view ok, uint32_t* models) {
  MsgpackReader r(ok);
  MsgpackFields f(r, "health");
  return f.ForEach([&](std::string_view key) -> Status {
    if (key == "models") return f.Int(models);
    return f.Skip();
  });
}

}  // namespace shoal::runtime_process
