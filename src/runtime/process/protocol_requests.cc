// The runtime protocol's requests (protocol.h): written by Shoal, read by a
// runtime. The replies are in protocol_replies.cc.
#include <variant>

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

void WriteConfig(MsgpackWriter& w, const ModelConfig& c) {
  w.MapHeader(c.graph ? 8 : 7);
  if (c.graph) {  // only when set: a runtime that knows no graphs sees the config it knew
    w.Str("graph");
    w.Bool(true);
  }
  w.Str("id");
  w.Str(c.id);
  w.Str("task");
  w.Str(TaskName(c.task));
  w.Str("path");
  w.Str(c.path);
  w.Str("max_input_tokens");
  w.Uint(c.max_input_tokens);
  w.Str("max_batch_tokens");
  w.Uint(c.max_batch_tokens);
  w.Str("max_batch_requests");
  w.Uint(c.max_batch_requests);
  w.Str("options");
  w.MapHeader(static_cast<uint32_t>(c.options.values().size()));
  for (const auto& [key, value] : c.options.values()) {
    w.Str(key);
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) w.Bool(v);
          else if constexpr (std::is_same_v<T, int64_t>) w.Int(v);
          else if constexpr (std::is_same_v<T, double>) w.Float64(v);
          else w.Str(v);
        },
        value);
  }
}

void WriteLoraConfig(MsgpackWriter& w, const LoraConfig& l) {
  w.MapHeader(2);
  w.Str("name");
  w.Str(l.name);
  w.Str("path");
  w.Str(l.path);
}

// An adapter's map: {"name", "path"}.
Status ReadLoraFields(MsgpackFields& f, LoraConfig* lora) {
  return f.ForEach([&](std::string_view key) -> Status {
    if (key == "name") return f.String(&lora->name);
    if (key == "path") return f.String(&lora->path);
    return f.Skip();
  });
}

}  // namespace


Status ReadRequest(std::string_view frame, Request* q) {
  MsgpackReader r(frame);
  MsgpackFields f(r, "request");
  auto raw = [&](std::string_view* v) { return f.reader().ReadRaw(v) ? Status::Ok() : f.Error("truncated"); };
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "op") return f.Str(&q->op);
    if (key == "id") return f.Int(&q->id);
    if (key == "model") return f.Str(&q->model);
    if (key == "threads") return f.Int(&q->threads);
    if (key == "versions") {
      uint32_t n = 0;
      if (!r.ReadArrayHeader(&n)) return f.Error("expected an array of versions");
      for (uint32_t i = 0; i < n; ++i) {
        int64_t v = 0;
        if (!r.ReadInt(&v) || v < 0) return f.Error("expected non-negative integers");
        q->versions.push_back(static_cast<uint32_t>(v));
      }
      return Status::Ok();
    }
    if (key == "config") return raw(&q->config);
    if (key == "items") return raw(&q->items);
    if (key == "loras") return raw(&q->loras);
    if (key == "lora") return raw(&q->lora);
    if (key == "job") return raw(&q->job);
    if (key == "inputs") return raw(&q->inputs);
    if (key == "target") return f.Int(&q->target);
    return f.Skip();
  }));
  if (q->op.empty()) return InvalidInput("request: no op");
  return Status::Ok();
}

std::string HelloRequest(uint64_t id) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "hello", id, 1);
  w.Str("versions");
  w.ArrayHeader(1);
  w.Uint(kProtocolVersion);
  return out;
}

std::string LoadRequest(uint64_t id, std::string_view model, const ModelConfig& config, int threads) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "load", id, 3);
  w.Str("model");
  w.Str(model);
  w.Str("threads");
  w.Uint(static_cast<uint64_t>(std::max(threads, 1)));
  w.Str("config");
  WriteConfig(w, config);
  return out;
}

std::string UnloadRequest(uint64_t id, std::string_view model) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "unload", id, 1);
  w.Str("model");
  w.Str(model);
  return out;
}

std::string LorasRequest(uint64_t id, std::string_view model, std::span<const LoraConfig> loras) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "loras", id, 2);
  w.Str("model");
  w.Str(model);
  w.Str("loras");
  w.ArrayHeader(static_cast<uint32_t>(loras.size()));
  for (const LoraConfig& l : loras) WriteLoraConfig(w, l);
  return out;
}

std::string CheckLoraRequest(uint64_t id, const ModelConfig& base, const LoraConfig& lora) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "check_lora", id, 2);
  w.Str("config");
  WriteConfig(w, base);
  w.Str("lora");
  WriteLoraConfig(w, lora);
  return out;
}

std::string EncodeRequest(uint64_t id, std::string_view model, std::span<const EncodeInput> in) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "encode", id, 2);
  w.Str("model");
  w.Str(model);
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(in.size()));
  for (const EncodeInput& e : in) {
    w.MapHeader(4);
    w.Str("text");
    w.Str(e.text);
    w.Str("truncate");
    w.Bool(e.truncate);
    w.Str("normalize");
    w.Bool(e.normalize);
    w.Str("lora");
    w.Str(e.lora);
  }
  return out;
}

std::string ScoreRequest(uint64_t id, std::string_view model, std::span<const ScoreInput> in) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "score", id, 2);
  w.Str("model");
  w.Str(model);
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(in.size()));
  for (const ScoreInput& s : in) {
    w.MapHeader(4);
    w.Str("text");
    w.Str(s.text);
    w.Str("text_pair");
    w.Str(s.text_pair);
    w.Str("truncate");
    w.Bool(s.truncate);
    w.Str("lora");
    w.Str(s.lora);
  }
  return out;
}

std::string ExtractRequest(uint64_t id, std::string_view model, std::span<const ExtractInput> in) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "extract", id, 2);
  w.Str("model");
  w.Str(model);
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(in.size()));
  for (const ExtractInput& e : in) {
    w.MapHeader(3 + (e.aggregation ? 1 : 0) + (e.top_k > 0 ? 1 : 0));
    w.Str("text");
    w.Str(e.text);
    w.Str("truncate");
    w.Bool(e.truncate);
    w.Str("lora");
    w.Str(e.lora);
    if (e.aggregation) {
      w.Str("aggregation");
      w.Str(AggregationName(*e.aggregation));
    }
    if (e.top_k > 0) {
      w.Str("top_k");
      w.Uint(e.top_k);
    }
  }
  return out;
}

std::string TokenizeRequest(uint64_t id, std::string_view model, std::span<const TokenizeInput> in) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "tokenize", id, 2);
  w.Str("model");
  w.Str(model);
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(in.size()));
  for (const TokenizeInput& t : in) {
    w.MapHeader(2);
    w.Str("text");
    w.Str(t.text);
    w.Str("add_special_tokens");
    w.Bool(t.add_special_tokens);
  }
  return out;
}

std::string TokenBatchRequest(uint64_t id, Task task, std::string_view model, std::span<const TokenInput> in) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, TaskName(task), id, 2);
  w.Str("model");
  w.Str(model);
  w.Str("items");
  w.ArrayHeader(static_cast<uint32_t>(in.size()));
  auto ints = [&](std::span<const int32_t> v) {
    w.ArrayHeader(static_cast<uint32_t>(v.size()));
    for (int32_t x : v) w.Int(x);
  };
  for (const TokenInput& t : in) {
    w.MapHeader(3);
    w.Str("ids");
    ints(t.ids);
    if (task == Task::kScore) {
      w.Str("type_ids");
      ints(t.type_ids);
    } else {
      w.Str("normalize");
      w.Bool(t.normalize);
    }
    w.Str("lora");
    w.Str(t.lora);
  }
  return out;
}

std::string PlainRequest(uint64_t id, std::string_view op) {
  std::string out;
  RequestEnvelope(&out, op, id, 0);
  return out;
}

Status ReadConfig(std::string_view raw, std::string_view section, ModelConfig* c) {
  c->options = RuntimeOptions(std::string(section));
  MsgpackReader r(raw);
  MsgpackFields f(r, "config");
  std::string_view task;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "id") return f.String(&c->id);
    if (key == "task") return f.Str(&task);
    if (key == "path") return f.String(&c->path);
    if (key == "max_input_tokens") return f.Int(&c->max_input_tokens);
    if (key == "max_batch_tokens") return f.Int(&c->max_batch_tokens);
    if (key == "max_batch_requests") return f.Int(&c->max_batch_requests);
    if (key == "graph") return f.Bool(&c->graph);
    if (key == "options") {
      MsgpackFields o(r, "config.options");
      return o.ForEach([&](std::string_view name) -> Status {
        switch (r.Peek()) {
          case wire::MsgpackType::kBool: {
            bool v = false;
            SHOAL_RETURN_IF_ERROR(o.Bool(&v));
            c->options.Set(std::string(name), v);
            return Status::Ok();
          }
          case wire::MsgpackType::kInt: {
            int64_t v = 0;
            SHOAL_RETURN_IF_ERROR(o.Int(&v));
            c->options.Set(std::string(name), v);
            return Status::Ok();
          }
          case wire::MsgpackType::kFloat: {
            double v = 0;
            SHOAL_RETURN_IF_ERROR(o.Double(&v));
            c->options.Set(std::string(name), v);
            return Status::Ok();
          }
          case wire::MsgpackType::kStr: {
            std::string v;
            SHOAL_RETURN_IF_ERROR(o.String(&v));
            c->options.Set(std::string(name), std::move(v));
            return Status::Ok();
          }
          default:
            return o.Error("expected a boolean, an integer, a number or a string");
        }
      });
    }
    return f.Skip();
  }));
  if (!ParseTask(task, &c->task)) return InvalidInput("config.task: '" + std::string(task) + "' is no task");
  return Status::Ok();
}

Status ReadLora(std::string_view raw, LoraConfig* lora) {
  MsgpackReader r(raw);
  MsgpackFields f(r, "lora");
  return ReadLoraFields(f, lora);
}

Status ReadLoras(std::string_view raw, std::vector<LoraConfig>* loras) {
  return ForEachItem(raw, "loras",
                     [&](uint32_t, MsgpackFields& f) { return ReadLoraFields(f, &loras->emplace_back()); });
}

Status ReadEncodeInputs(std::string_view raw, std::vector<EncodeInput>* in) {
  return ForEachItem(raw, "items", [&](uint32_t, MsgpackFields& f) -> Status {
    EncodeInput& e = in->emplace_back();
    return f.ForEach([&](std::string_view key) -> Status {
      if (key == "text") return f.Str(&e.text);
      if (key == "truncate") return f.Bool(&e.truncate);
      if (key == "normalize") return f.Bool(&e.normalize);
      if (key == "lora") return f.Str(&e.lora);
      return f.Skip();
    });
  });
}

Status ReadScoreInputs(std::string_view raw, std::vector<ScoreInput>* in) {
  return ForEachItem(raw, "items", [&](uint32_t, MsgpackFields& f) -> Status {
    ScoreInput& s = in->emplace_back();
    return f.ForEach([&](std::string_view key) -> Status {
      if (key == "text") return f.Str(&s.text);
      if (key == "text_pair") return f.Str(&s.text_pair);
      if (key == "truncate") return f.Bool(&s.truncate);
      if (key == "lora") return f.Str(&s.lora);
      return f.Skip();
    });
  });
}

Status ReadExtractInputs(std::string_view raw, std::vector<ExtractInput>* in) {
  return ForEachItem(raw, "items", [&](uint32_t, MsgpackFields& f) -> Status {
    ExtractInput& e = in->emplace_back();
    return f.ForEach([&](std::string_view key) -> Status {
      if (key == "text") return f.Str(&e.text);
      if (key == "truncate") return f.Bool(&e.truncate);
      if (key == "lora") return f.Str(&e.lora);
      if (key == "aggregation") return wire::ReadAggregation(f, &e.aggregation);
      if (key == "top_k") return f.Int(&e.top_k);
      return f.Skip();
    });
  });
}

Status ReadTokenizeInputs(std::string_view raw, std::vector<TokenizeInput>* in) {
  return ForEachItem(raw, "items", [&](uint32_t, MsgpackFields& f) -> Status {
    TokenizeInput& t = in->emplace_back();
    return f.ForEach([&](std::string_view key) -> Status {
      if (key == "text") return f.Str(&t.text);
      if (key == "add_special_tokens") return f.Bool(&t.add_special_tokens);
      return f.Skip();
    });
  });
}

}  // namespace shoal::runtime_process
