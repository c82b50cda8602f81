#include "worker/batch_runner.h"

#include "common/log.h"
#include "runtime/call_stages.h"
#include "queue/message.h"
#include "wire/item.h"
#include "wire/work_message.h"

namespace shoal::worker {

// One task's share of a batch: the items and their decoded fields.
struct TaskGroup {
  std::vector<const WorkItem*> items;
  std::vector<wire::ItemFields> fields;
};

namespace {

// Per task: the model input an item becomes (the Out* argument only picks
// the overload), the result payload an output becomes, and the model call.
EncodeInput MakeInput(const WorkItem& it, const wire::ItemFields& f, EncodeOutput*) {
  return {.text = f.text,
          .truncate = it.work.truncate,
          .normalize = it.work.normalize,
          .lora = it.work.lora,
          .ids = f.ids,
          .image = f.image,
          .outputs = it.work.outputs != 0 ? it.work.outputs : static_cast<OutputKinds>(OutputKind::kDense),
          .role = it.work.role,
          .sparse_top_k = it.work.sparse_top_k,
          .sparse_tokens = it.work.sparse_tokens};
}
ScoreInput MakeInput(const WorkItem& it, const wire::ItemFields& f, ScoreOutput*) {
  return {.text = f.text, .text_pair = f.text_pair, .image = f.image, .truncate = it.work.truncate,
          .lora = it.work.lora};
}
ExtractInput MakeInput(const WorkItem& it, const wire::ItemFields& f, ExtractOutput*) {
  return {.text = f.text,
          .image = f.image,
          .document = f.document,
          .pages = f.pages,
          .text_layer = f.text_layer,
          .truncate = it.work.truncate,
          .lora = it.work.lora,
          .aggregation = it.work.aggregation,
          .top_k = it.work.top_k};
}
TokenizeInput MakeInput(const WorkItem&, const wire::ItemFields& f, TokenizeOutput*) {
  return {f.text, f.add_special_tokens};
}

// What the reply's header says of an output: tokens seen, truncated.
template <class Out>
void Describe(const Out& o, wire::ReplyHeader* h) {
  h->tokens = o.tokens;
  h->truncated = o.truncated;
}
void Describe(const TokenizeOutput& o, wire::ReplyHeader* h) { h->tokens = static_cast<uint32_t>(o.tokens.size()); }

// The outputs the input asked for.
void AppendResult(const EncodeInput& in, const EncodeOutput& o, std::string* out) {
  wire::EncodeResultView r;
  if (Has(in.outputs, OutputKind::kDense)) r.dense = o.dense;
  if (Has(in.outputs, OutputKind::kSparse)) r.sparse = {{o.sparse.indices, o.sparse.values, o.sparse.tokens}};
  if (Has(in.outputs, OutputKind::kMultivector)) r.multivector = {{o.multivector.values, o.multivector.dim}};
  wire::AppendEncodeResult(r, out);
}
template <class In>
void AppendResult(const In&, const ScoreOutput& o, std::string* out) {
  wire::AppendLogitsResult(o.logits.data(), o.logits.size(), out);
}
template <class In>
void AppendResult(const In&, const ExtractOutput& o, std::string* out) {
  // An OCR pipeline answers lines, a token classifier entities (perhaps
  // none of either); a text classifier labels.
  if (o.lines) {
    wire::AppendLinesResult(*o.lines, out);
  } else if (o.labels.empty()) {
    wire::AppendEntitiesResult(o.entities, out);
  } else {
    wire::AppendLabelsResult(o.labels, out);
  }
}
template <class In>
void AppendResult(const In&, const TokenizeOutput& o, std::string* out) {
  std::vector<wire::TokenView> views;
  views.reserve(o.tokens.size());
  for (const Token& t : o.tokens) {
    views.push_back({t.id, t.text, t.special, t.has_offsets, t.start, t.stop});
  }
  wire::AppendTokensResult(views, out);
}

Status Call(Model& m, std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  return m.Encode(in, out);
}
Status Call(Model& m, std::span<const ScoreInput> in, std::span<ScoreOutput> out) {
  return m.Score(in, out);
}
Status Call(Model& m, std::span<const ExtractInput> in, std::span<ExtractOutput> out) {
  return m.Extract(in, out);
}
Status Call(Model& m, std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  return m.Tokenize(in, out);
}

}  // namespace

void BatchRunner::Run(std::vector<WorkItem>& batch) {
  if (batch.empty()) return;
  ServedModel& served = *batch.front().model;
  const int64_t start_wall_us = UnixMicros();
  const int64_t now_ms = start_wall_us / 1000;
  if (served.metrics) RecordBatch(served, batch);

  // Items worth running (not expired, decodable), grouped by task.
  TaskGroup groups[static_cast<int>(Task::kExtract) + 1];
  for (WorkItem& it : batch) {
    if (spans_ && ItemSpans::Traced(it)) spans_->Queue(it, start_wall_us);
    if (it.work.deadline_unix_ms > 0 && now_ms >= it.work.deadline_unix_ms) {
      Settle(it, Outcome::kExpired);
      continue;
    }
    if (cancelled_ && cancelled_->Contains(it.work.request_id)) {
      Settle(it, Outcome::kCancelled);
      continue;
    }
    if (!served.model) {  // it failed to load here: the reason, not a retry
      Settle(it, Outcome::kLoadFailed, served.load_error);
      continue;
    }
    if (!CheckLora(served, it)) continue;
    const Task task = it.work.task;
    if (task == Task::kGenerate) {  // a generator's items go to its engine, not here
      Settle(it, Outcome::kBadInput,
             InvalidInput("model '" + served.spec->id + "' does not generate (task: " +
                          std::string(TaskName(served.spec->task)) + ")"));
      continue;
    }
    if (!it.work.payload_key.empty() && !Fetch(it)) continue;
    wire::ItemFields fields;
    if (Status s = wire::DecodeItem(it.payload, task, &fields); !s.ok()) {
      Settle(it, Outcome::kBadInput, s);
      continue;
    }
    if (!fields.ids.empty() && !served.model->takes_token_ids()) {
      Settle(it, Outcome::kBadInput,
             InvalidInput("input: model '" + served.spec->id + "' takes text only (its runtime '" +
                          served.spec->runtime + "' runs no token-id inputs)"));
      continue;
    }
    if (!fields.document.empty() && !served.model->takes_documents()) {
      Settle(it, Outcome::kBadInput,
             InvalidInput("input: model '" + served.spec->id + "' takes no documents (PDFs go to an OCR pipeline)"));
      continue;
    }
    // The kinds the item holds (a score item's image comes with a text),
    // each of which the model must take.
    const bool has_image = !fields.image.empty();
    const bool has_text = fields.document.empty() && (!has_image || task == Task::kScore);
    const bool image_refused = has_image && !served.model->takes_images();
    if (image_refused || (has_text && !served.model->takes_text())) {
      Settle(it, Outcome::kBadInput,
             InvalidInput("input: model '" + served.spec->id + "' takes " +
                          (image_refused ? "text, not images" : "images, not text")));
      continue;
    }
    if (task == Task::kEncode && it.work.outputs != 0 && (it.work.outputs & ~served.model->encode_outputs()) != 0) {
      Settle(it, Outcome::kBadInput,
             InvalidInput("output: model '" + served.spec->id + "' produces " +
                          OutputKindsText(served.model->encode_outputs()) + ", not " +
                          OutputKindsText(it.work.outputs & ~served.model->encode_outputs())));
      continue;
    }
    TaskGroup& g = groups[static_cast<int>(task)];
    g.items.push_back(&it);
    g.fields.push_back(std::move(fields));
  }
  RunGroup<EncodeOutput>(served, groups[static_cast<int>(Task::kEncode)], start_wall_us);
  RunGroup<ScoreOutput>(served, groups[static_cast<int>(Task::kScore)], start_wall_us);
  RunGroup<ExtractOutput>(served, groups[static_cast<int>(Task::kExtract)], start_wall_us);
  RunGroup<TokenizeOutput>(served, groups[static_cast<int>(Task::kTokenize)], start_wall_us);
}

template <class Out>
void BatchRunner::RunGroup(ServedModel& served, const TaskGroup& g, int64_t start_wall_us) {
  if (g.items.empty()) return;
  using In = decltype(MakeInput(*g.items[0], g.fields[0], static_cast<Out*>(nullptr)));
  std::vector<In> inputs;
  inputs.reserve(g.items.size());
  for (size_t k = 0; k < g.items.size(); ++k) {
    inputs.push_back(MakeInput(*g.items[k], g.fields[k], static_cast<Out*>(nullptr)));
  }
  std::vector<Out> outputs(inputs.size());
  ThisCallStages() = {};
  const auto t0 = SteadyClock::now();
  const Status batch_status = Call(*served.model, std::span<const In>(inputs), std::span<Out>(outputs));
  const int64_t inference_us = MicrosSince(t0);
  const int64_t tokenize_us = std::min(ThisCallStages().tokenize_us, inference_us);
  if (spans_) {
    const auto tokenized = t0 + std::chrono::microseconds(tokenize_us);
    const auto ran = t0 + std::chrono::microseconds(inference_us);
    for (const WorkItem* it : g.items) {
      if (!ItemSpans::Traced(*it)) continue;
      spans_->Stage(*it, "tokenize", t0, tokenized, g.items.size());
      spans_->Stage(*it, "inference", tokenized, ran, g.items.size(), batch_status);
    }
  }
  if (const ModelSeries* m = served.metrics) {
    m->tokenize_seconds->Observe(tokenize_us / 1e6);
    m->inference_seconds->Observe((inference_us - tokenize_us) / 1e6);
    for (const WorkItem* it : g.items) {
      m->queue_seconds->Observe(std::max<int64_t>(0, start_wall_us - it->enqueued_us) / 1e6);
    }
  }
  if (!batch_status.ok()) {
    spdlog::error("batch of {} on {} failed: {}", inputs.size(), served.spec->id,
                  batch_status.ToString());
  }

  std::string reply;  // header, then the result: written once, published as is
  for (size_t k = 0; k < g.items.size(); ++k) {
    const WorkItem& it = *g.items[k];
    if (!batch_status.ok()) {
      // A runtime process lost puts the item back; a model that no longer
      // loads answers 502; any other failure of the batch is the model's.
      switch (batch_status.code()) {
        case Code::kNoCapacity: Settle(it, Outcome::kRuntimeLost); break;
        case Code::kModelLoadFailed: Settle(it, Outcome::kLoadFailed, batch_status); break;
        default: Settle(it, Outcome::kInferenceFailed, Status(Code::kInferenceError, batch_status.message()));
      }
      continue;
    }
    const Out& out = outputs[k];
    if (!out.status.ok()) {
      // The input's fault (or an adapter the model does not have): as
      // bad input, answered with the runtime's code.
      const Code code = out.status.code();
      Settle(it, code == Code::kInvalidInput || code == Code::kModelNotFound ? Outcome::kBadInput
                                                                             : Outcome::kInferenceFailed,
             out.status);
      continue;
    }
    const auto result_started = SteadyClock::now();
    wire::ReplyHeader h = ResultHeader(it);
    Describe(out, &h);
    h.queue_us = std::max<int64_t>(0, start_wall_us - it.enqueued_us);
    h.inference_us = inference_us;
    reply.clear();
    wire::AppendReplyHeader(h, &reply);
    const size_t header_bytes = reply.size();
    AppendResult(inputs[k], out, &reply);
    const size_t result_bytes = reply.size() - header_bytes;
    if (result_bytes > wire::kMaxResultParts * PartBytes()) {
      Settle(it, Outcome::kBadInput,
             Status(Code::kPayloadTooLarge, "the result is " + std::to_string(result_bytes) +
                                                " bytes, over the limit of " +
                                                std::to_string(wire::kMaxResultParts * PartBytes())));
      continue;
    }
    spdlog::debug("rid={} item={} model={} ran in a batch of {} queue_ms={:.2f} inference_ms={:.2f} attempt={}",
                  it.work.request_id, it.work.item, served.spec->id, g.items.size(), h.queue_us / 1e3,
                  inference_us / 1e3, it.delivered);
    PublishResult(it, h, reply, header_bytes);
    if (spans_ && ItemSpans::Traced(it)) spans_->Stage(it, "result", result_started, SteadyClock::now());
    Ack(it, DispositionFor(Outcome::kSucceeded).action, {});
    if (served.metrics) {
      served.metrics->Settled(Outcome::kSucceeded);
      if (!it.work.lora.empty()) served.metrics->loras->Record(it.work.lora, h.tokens);
    }
  }
}

bool BatchRunner::CheckLora(const ServedModel& served, const WorkItem& item) {
  const std::string_view lora = item.work.lora;
  if (lora.empty()) return true;
  if (served.loras.Contains(lora)) {
    // Known, but maybe not read from disk yet: rather than hold this batch
    // for the load, the item waits in the stream while the model loads it
    // in the background — except on its last delivery, or near its
    // deadline, when it runs and waits for the load itself.
    const bool may_wait = item.InStream() && item.delivered + 1 < served.spec->queue.max_deliver &&
                          (item.work.deadline_unix_ms == 0 || UnixMicros() / 1000 + 100 < item.work.deadline_unix_ms);
    if (may_wait && !served.model->LoraReady(lora)) {
      Settle(item, Outcome::kLoraLoading);
      return false;
    }
    return true;
  }
  // Registered a moment ago, and this worker has not seen the catalog
  // change yet (the gateway that queued it has): back to the stream for a
  // moment (ack_policy.h), a bounded number of times.
  constexpr uint64_t kLoraDeliveries = 3;
  if (item.InStream() && item.delivered < std::min<uint64_t>(kLoraDeliveries, served.spec->queue.max_deliver)) {
    Settle(item, Outcome::kLoraPending);
    return false;
  }
  Settle(item, Outcome::kBadInput,
         Status(Code::kModelNotFound, "model '" + served.spec->id + "' has no LoRA '" + std::string(lora) +
                                          "' (on worker " + worker_id_ + ")"));
  return false;
}

void BatchRunner::RecordBatch(const ServedModel& served, const std::vector<WorkItem>& batch) {
  uint64_t cost = 0;
  for (const WorkItem& it : batch) cost += it.work.cost;
  const ModelSeries& m = *served.metrics;
  m.batches->Inc();
  m.batch_items->Observe(static_cast<double>(batch.size()));
  m.batch_cost->Observe(static_cast<double>(cost));
  m.batch_fill->Observe(static_cast<double>(cost) / std::max<uint32_t>(served.spec->batching.max_batch_tokens, 1));
}

bool BatchRunner::Fetch(WorkItem& item) {
  if (!payloads_) {
    Settle(item, Outcome::kInferenceFailed, Internal("this worker has no payload store"));
    return false;
  }
  auto bytes = std::make_unique<std::string>();
  const std::string key(item.work.payload_key);
  const auto t0 = SteadyClock::now();
  const Status s = payloads_->Get(key, bytes.get());
  if (item.model && item.model->metrics) item.model->metrics->payload_seconds->Observe(MicrosSince(t0) / 1e6);
  if (spans_ && ItemSpans::Traced(item)) spans_->Stage(item, "payload fetch", t0, SteadyClock::now(), 0, s);
  if (s.code() == Code::kNotFound) {
    // Its request ended (answered, failed or timed out) — or this worker
    // reads another store than the gateway writes: say so once per item.
    spdlog::info("rid={} item={}: {}; dropped (check --payload-store if requests time out)", item.work.request_id,
                 item.work.item, s.message());
    Settle(item, Outcome::kPayloadGone);
    return false;
  }
  if (!s.ok()) {
    spdlog::warn("rid={} item={}: {}", item.work.request_id, item.work.item, s.ToString());
    Settle(item, Outcome::kPayloadUnavailable);
    return false;
  }
  item.fetched = std::move(bytes);
  item.payload = *item.fetched;
  return true;
}

void BatchRunner::Settle(const WorkItem& item, Outcome outcome, const Status& error) {
  const Disposition d = DispositionFor(outcome);
  if (item.model && item.model->metrics) item.model->metrics->Settled(outcome);
  if (d.reply) {
    PublishError(item, error);
  } else if (!item.InStream() && d.action == AckAction::kNak) {
    // A pushed item has no queue behind it: a nak would hand it to nobody, so
    // the client hears now that this worker cannot run it, not a 504 later.
    PublishError(item, Status(Code::kNoCapacity, outcome == Outcome::kShuttingDown
                                                     ? "the worker is shutting down"
                                                     : "model not served by this worker"));
  }
  if (outcome == Outcome::kBadInput || outcome == Outcome::kInferenceFailed) {
    spdlog::info("rid={} item={} {}: {}", item.work.request_id, item.work.item, CodeName(error.code()),
                 error.message());
  } else {
    spdlog::debug("rid={} item={} outcome={}", item.work.request_id, item.work.item, OutcomeName(outcome));
  }
  Ack(item, d.action, d.nak_delay);
}

void BatchRunner::Progress(const WorkItem& item) { Ack(item, AckAction::kInProgress, {}); }

void BatchRunner::Complete(const WorkItem& item) {
  Ack(item, AckAction::kAck, {});
  if (item.model && item.model->metrics) item.model->metrics->Settled(Outcome::kSucceeded);
}

size_t BatchRunner::PartBytes() const {
  return static_cast<size_t>(std::max<int64_t>(natsConnection_GetMaxPayload(nc_) - wire::kHeaderRoom, 1024));
}

wire::ReplyHeader BatchRunner::ResultHeader(const WorkItem& item) const {
  wire::ReplyHeader h;
  h.item = item.work.item;
  h.worker = worker_id_;
  h.attempt = static_cast<uint32_t>(item.delivered);
  h.cold_start = item.enqueued_us < item.model->loaded_unix_us;
  return h;
}

void BatchRunner::PublishResult(const WorkItem& item, wire::ReplyHeader h, std::string_view reply,
                                size_t header_bytes) {
  const std::string subject(item.work.reply);
  const std::string_view result = reply.substr(header_bytes);
  const size_t part_bytes = PartBytes();
  if (result.size() <= part_bytes) return Publish(item, subject, reply);
  // Too large for one message: parts, each with the whole header.
  h.parts = static_cast<uint32_t>((result.size() + part_bytes - 1) / part_bytes);
  std::string part;
  for (h.part = 0; h.part < h.parts; ++h.part) {
    part.clear();
    wire::AppendReplyHeader(h, &part);
    part.append(result.substr(size_t{h.part} * part_bytes, part_bytes));
    Publish(item, subject, part);
  }
}

void BatchRunner::PublishError(const WorkItem& item, const Status& error) {
  std::string reply;
  wire::AppendErrorReply(item.work.item, worker_id_, static_cast<uint32_t>(item.delivered), error, &reply);
  Publish(item, std::string(item.work.reply), reply);
}

void BatchRunner::Publish(const WorkItem& item, const std::string& subject, std::string_view message) {
  if (Status s = queue::Publish(nc_, subject, message); !s.ok()) {
    spdlog::warn("rid={} reply not published: {}", item.work.request_id, s.message());
  }
}

void BatchRunner::Ack(const WorkItem& item, AckAction action, std::chrono::milliseconds delay) {
  if (!item.HasAck()) return;  // pushed over core NATS: nobody to settle with
  (void)queue::Publish(nc_, std::string(item.ack), AckBody(action, delay));
}

}  // namespace shoal::worker
