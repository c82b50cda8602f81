#include "wire/work_message.h"

#include <algorithm>
#include <limits>

#include "wire/item.h"
#include "wire/msgpack_fields.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {
namespace {

// A header map's fields: "v" checked here, the others read by `field`.
template <class Field>
Status ReadHeader(MsgpackFields& f, Field&& field) {
  uint64_t version = 0;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "v") return f.Int(&version);
    return field(key);
  }));
  if (version != kMessageVersion) {
    return f.Error("version " + std::to_string(version) + "; this process reads version " +
                   std::to_string(kMessageVersion));
  }
  return Status::Ok();
}

// Writes the fields of a header map whose size is known only once they are
// written: its one-byte map header is patched at the end (widened, should a
// header ever hold over 15 fields).
class HeaderWriter {
 public:
  explicit HeaderWriter(std::string* out) : out_(out), at_(out->size()), w_(out) {
    w_.MapHeader(0);
    Key("v");
    w_.Uint(kMessageVersion);
  }
  ~HeaderWriter() {
    if (fields_ <= 15) {
      (*out_)[at_] = static_cast<char>(0x80 | fields_);
    } else {  // map 16: a tag and a big-endian count
      const char wide[3] = {static_cast<char>(0xde), static_cast<char>(fields_ >> 8), static_cast<char>(fields_)};
      out_->replace(at_, 1, wide, 3);
    }
  }

  MsgpackWriter& Key(std::string_view key) {
    ++fields_;
    w_.Str(key);
    return w_;
  }

 private:
  std::string* out_;
  const size_t at_;
  MsgpackWriter w_;
  unsigned fields_ = 0;
};

}  // namespace

void AppendWork(const WorkHeader& h, std::string_view body, std::string* out) {
  out->reserve(out->size() + 96 + h.request_id.size() + h.reply.size() + h.lora.size() + h.payload_key.size() + h.trace.size() +
               body.size());
  {
    HeaderWriter w(out);
    w.Key("request").Str(h.request_id);
    w.Key("item").Uint(h.item);
    w.Key("cost").Uint(h.cost);
    if (h.deadline_unix_ms > 0) w.Key("deadline").Uint(static_cast<uint64_t>(h.deadline_unix_ms));
    w.Key("reply").Str(h.reply);
    w.Key("task").Str(TaskName(h.task));
    if (h.truncate) w.Key("truncate").Bool(true);
    if (!h.normalize) w.Key("normalize").Bool(false);
    if (!h.lora.empty()) w.Key("lora").Str(h.lora);
    if (h.aggregation) w.Key("aggregation").Str(AggregationName(*h.aggregation));
    if (h.top_k > 0) w.Key("top_k").Uint(h.top_k);
    if (h.outputs != 0 && h.outputs != static_cast<OutputKinds>(OutputKind::kDense)) {
      w.Key("outputs").Uint(h.outputs);
    }
    if (h.role != InputRole::kUnspecified) w.Key("input_type").Str(InputRoleName(h.role));
    if (h.sparse_top_k > 0) w.Key("sparse_top_k").Uint(h.sparse_top_k);
    if (h.sparse_tokens) w.Key("sparse_tokens").Bool(true);
    if (!h.payload_key.empty()) w.Key("payload").Str(h.payload_key);
    if (!h.trace.empty()) w.Key("trace").Str(h.trace);
  }
  out->append(body);
}

Status ReadWork(std::string_view message, WorkHeader* h, std::string_view* body) {
  MsgpackReader r(message);
  MsgpackFields f(r, "work");
  *h = WorkHeader{};
  SHOAL_RETURN_IF_ERROR(ReadHeader(f, [&](std::string_view key) -> Status {
    if (key == "request") return f.Str(&h->request_id);
    if (key == "item") return f.Int(&h->item);
    if (key == "cost") {
      SHOAL_RETURN_IF_ERROR(f.Int(&h->cost));
      h->cost = std::max<uint32_t>(h->cost, 1);
      return Status::Ok();
    }
    if (key == "deadline") return f.Int(&h->deadline_unix_ms);
    if (key == "reply") return f.Str(&h->reply);
    if (key == "task") {
      std::string_view name;
      SHOAL_RETURN_IF_ERROR(f.Str(&name));
      return ParseTask(name, &h->task) ? Status::Ok() : f.Error("unknown task '" + std::string(name) + "'");
    }
    if (key == "truncate") return f.Bool(&h->truncate);
    if (key == "normalize") return f.Bool(&h->normalize);
    if (key == "lora") return f.Str(&h->lora);
    if (key == "aggregation") return ReadAggregation(f, &h->aggregation);
    if (key == "top_k") return f.Int(&h->top_k);
    if (key == "outputs") {
      SHOAL_RETURN_IF_ERROR(f.Int(&h->outputs));
      return h->outputs != 0 && (h->outputs & ~kAllOutputKinds) == 0 ? Status::Ok()
                                                                      : f.Error("not a set of output kinds");
    }
    if (key == "input_type") {
      std::string_view role;
      SHOAL_RETURN_IF_ERROR(f.Str(&role));
      return ParseInputRole(role, &h->role) ? Status::Ok() : f.Error("'" + std::string(role) + "' is neither query nor document");
    }
    if (key == "sparse_top_k") return f.Int(&h->sparse_top_k);
    if (key == "sparse_tokens") return f.Bool(&h->sparse_tokens);
    if (key == "payload") return f.Str(&h->payload_key);
    if (key == "trace") return f.Str(&h->trace);
    return f.Skip();
  }));
  if (h->request_id.empty() || h->reply.empty()) {
    return InvalidInput("work: no request id or reply subject (nobody to answer)");
  }
  *body = message.substr(r.offset());
  return Status::Ok();
}

void AppendReplyHeader(const ReplyHeader& h, std::string* out) {
  HeaderWriter w(out);
  w.Key("item").Uint(h.item);
  w.Key("worker").Str(h.worker);
  w.Key("attempt").Uint(h.attempt);
  if (h.error != Code::kOk) w.Key("error").Str(CodeName(h.error));
  if (h.tokens > 0) w.Key("tokens").Uint(h.tokens);
  if (h.truncated) w.Key("truncated").Bool(true);
  if (h.cold_start) w.Key("cold_start").Bool(true);
  if (h.queue_us > 0) w.Key("queue_us").Uint(static_cast<uint64_t>(h.queue_us));
  if (h.inference_us > 0) w.Key("inference_us").Uint(static_cast<uint64_t>(h.inference_us));
  if (h.parts > 0) {
    w.Key("part").Uint(h.part);
    w.Key("parts").Uint(h.parts);
  }
  if (h.seq > 0) w.Key("seq").Uint(h.seq);
  if (h.final) w.Key("final").Bool(true);
}

void AppendErrorReply(uint32_t item, std::string_view worker, uint32_t attempt, const Status& error,
                      std::string* out) {
  ReplyHeader h;
  h.item = item;
  h.worker = worker;
  h.attempt = attempt;
  h.error = error.ok() ? Code::kInternal : error.code();
  AppendReplyHeader(h, out);
  out->append(error.message());
}

Status ReadReply(std::string_view message, ReplyHeader* h, std::string_view* body) {
  MsgpackReader r(message);
  MsgpackFields f(r, "reply");
  *h = ReplyHeader{};
  SHOAL_RETURN_IF_ERROR(ReadHeader(f, [&](std::string_view key) -> Status {
    if (key == "item") return f.Int(&h->item);
    if (key == "worker") return f.Str(&h->worker);
    if (key == "attempt") return f.Int(&h->attempt);
    if (key == "error") {
      std::string_view name;
      SHOAL_RETURN_IF_ERROR(f.Str(&name));
      // A name this process does not know still reads as an error.
      h->error = CodeFromName(name);
      if (h->error == Code::kOk) h->error = Code::kInternal;
      return Status::Ok();
    }
    if (key == "tokens") return f.Int(&h->tokens);
    if (key == "truncated") return f.Bool(&h->truncated);
    if (key == "cold_start") return f.Bool(&h->cold_start);
    if (key == "queue_us") return f.Int(&h->queue_us);
    if (key == "inference_us") return f.Int(&h->inference_us);
    if (key == "part") return f.Int(&h->part);
    if (key == "parts") return f.Int(&h->parts);
    if (key == "seq") return f.Int(&h->seq);
    if (key == "final") return f.Bool(&h->final);
    return f.Skip();
  }));
  *body = message.substr(r.offset());
  return Status::Ok();
}

}  // namespace shoal::wire
