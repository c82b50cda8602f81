#include "worker/batch_runner.h"

#include "common/log.h"
#include "runtime/call_stages.h"
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
  return {.text = f.text, .truncate = it.truncate, .normalize = it.normalize, .lora = it.lora};
}
ScoreInput MakeInput(const WorkItem& it, const wire::ItemFields& f, ScoreOutput*) {
  return {.text = f.text, .text_pair = f.text_pair, .truncate = it.truncate, .lora = it.lora};
}
TokenizeInput MakeInput(const WorkItem&, const wire::ItemFields& f, TokenizeOutput*) {
  return {f.text, f.add_special_tokens};
}

ResultMeta AppendResult(const EncodeOutput& o, std::string* payload) {
  wire::AppendDenseResult(o.dense.data(), o.dense.size(), payload);
  return {o.tokens, o.truncated};
}
ResultMeta AppendResult(const ScoreOutput& o, std::string* payload) {
  wire::AppendLogitsResult(o.logits.data(), o.logits.size(), payload);
  return {o.tokens, o.truncated};
}
ResultMeta AppendResult(const TokenizeOutput& o, std::string* payload) {
  std::vector<wire::TokenView> views;
  views.reserve(o.tokens.size());
  for (const Token& t : o.tokens) {
    views.push_back({t.id, t.text, t.special, t.has_offsets, t.start, t.stop});
  }
  wire::AppendTokensResult(views, payload);
  return {static_cast<uint32_t>(o.tokens.size()), false};
}

Status Call(Model& m, std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  return m.Encode(in, out);
}
Status Call(Model& m, std::span<const ScoreInput> in, std::span<ScoreOutput> out) {
  return m.Score(in, out);
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
  TaskGroup groups[3];
  for (WorkItem& it : batch) {
    if (it.deadline_ms > 0 && now_ms >= it.deadline_ms) {
      Settle(it, Outcome::kExpired);
      continue;
    }
    if (cancelled_ && cancelled_->Contains(it.request_id)) {
      Settle(it, Outcome::kCancelled);
      continue;
    }
    if (!served.model) {  // it failed to load here: the reason, not a retry
      Settle(it, Outcome::kLoadFailed, served.load_error);
      continue;
    }
    if (!CheckLora(served, it)) continue;
    wire::Task task = wire::Task::kEncode;
    if (!it.task.empty() && !wire::ParseTask(it.task, &task)) {
      Settle(it, Outcome::kBadInput, InvalidInput("unknown task '" + std::string(it.task) + "'"));
      continue;
    }
    if (!it.payload_key.empty() && !Fetch(it)) continue;
    wire::ItemFields fields;
    if (Status s = wire::DecodeItem(it.payload, task, &fields); !s.ok()) {
      Settle(it, Outcome::kBadInput, s);
      continue;
    }
    TaskGroup& g = groups[static_cast<int>(task)];
    g.items.push_back(&it);
    g.fields.push_back(fields);
  }
  RunGroup<EncodeOutput>(served, groups[static_cast<int>(wire::Task::kEncode)], start_wall_us);
  RunGroup<ScoreOutput>(served, groups[static_cast<int>(wire::Task::kScore)], start_wall_us);
  RunGroup<TokenizeOutput>(served, groups[static_cast<int>(wire::Task::kTokenize)], start_wall_us);
  served.in_flight.fetch_sub(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
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
  if (const ModelSeries* m = served.metrics) {
    const int64_t tokenize_us = std::min(ThisCallStages().tokenize_us, inference_us);
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

  std::string payload;
  for (size_t k = 0; k < g.items.size(); ++k) {
    const WorkItem& it = *g.items[k];
    if (!batch_status.ok()) {
      Settle(it, Outcome::kInferenceFailed, Status(Code::kInferenceError, batch_status.message()));
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
    payload.clear();
    const ResultMeta meta = AppendResult(out, &payload);
    if (payload.size() > wire::kMaxResultParts * PartBytes()) {
      Settle(it, Outcome::kBadInput,
             Status(Code::kPayloadTooLarge, "the result is " + std::to_string(payload.size()) +
                                                " bytes, over the limit of " +
                                                std::to_string(wire::kMaxResultParts * PartBytes())));
      continue;
    }
    const int64_t queue_us = std::max<int64_t>(0, start_wall_us - it.enqueued_us);
    spdlog::debug("rid={} item={} model={} ran in a batch of {} queue_ms={:.2f} inference_ms={:.2f} attempt={}",
                  it.request_id, it.index, served.spec->id, g.items.size(), queue_us / 1e3, inference_us / 1e3,
                  it.delivered);
    PublishResult(it, payload, meta, queue_us, inference_us);
    Ack(it, DispositionFor(Outcome::kSucceeded).action, {});
    if (served.metrics) {
      served.metrics->Settled(Outcome::kSucceeded);
      if (!it.lora.empty()) served.metrics->loras->Record(it.lora, meta.tokens);
    }
  }
}

bool BatchRunner::CheckLora(const ServedModel& served, const WorkItem& item) {
  if (item.lora.empty()) return true;
  if (served.loras.Contains(item.lora)) {
    // Known, but maybe not read from disk yet: rather than hold this batch
    // for the load, the item waits in the stream while the model loads it
    // in the background — except on its last delivery, or near its
    // deadline, when it runs and waits for the load itself.
    const bool may_wait = item.HasAck() && item.delivered + 1 < served.spec->queue.max_deliver &&
                          (item.deadline_ms == 0 || UnixMicros() / 1000 + 100 < item.deadline_ms);
    if (may_wait && !served.model->LoraReady(item.lora)) {
      Settle(item, Outcome::kLoraLoading);
      return false;
    }
    return true;
  }
  // Registered a moment ago, and this worker has not seen the catalog
  // change yet (the gateway that queued it has): back to the stream for a
  // moment (ack_policy.h), a bounded number of times.
  constexpr uint64_t kLoraDeliveries = 3;
  if (item.HasAck() && item.delivered < std::min<uint64_t>(kLoraDeliveries, served.spec->queue.max_deliver)) {
    Settle(item, Outcome::kLoraPending);
    return false;
  }
  Settle(item, Outcome::kBadInput,
         Status(Code::kModelNotFound, "model '" + served.spec->id + "' has no LoRA '" + std::string(item.lora) +
                                          "' (on worker " + worker_id_ + ")"));
  return false;
}

void BatchRunner::RecordBatch(const ServedModel& served, const std::vector<WorkItem>& batch) {
  uint64_t cost = 0;
  for (const WorkItem& it : batch) cost += it.cost;
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
  const std::string key(item.payload_key);
  const auto t0 = SteadyClock::now();
  const Status s = payloads_->Get(key, bytes.get());
  if (item.model && item.model->metrics) item.model->metrics->payload_seconds->Observe(MicrosSince(t0) / 1e6);
  if (s.code() == Code::kNotFound) {
    // Its request ended (answered, failed or timed out) — or this worker
    // reads another store than the gateway writes: say so once per item.
    spdlog::info("rid={} item={}: {}; dropped (check --payload-store if requests time out)", item.request_id,
                 item.index, s.message());
    Settle(item, Outcome::kPayloadGone);
    return false;
  }
  if (!s.ok()) {
    spdlog::warn("rid={} item={}: {}", item.request_id, item.index, s.ToString());
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
  } else if (!item.HasAck() && d.action == AckAction::kNak) {
    // A pushed item has no queue behind it: a nak would hand it to nobody, so
    // the client hears now that this worker cannot run it, not a 504 later.
    PublishError(item, Status(Code::kNoCapacity, outcome == Outcome::kShuttingDown
                                                     ? "the worker is shutting down"
                                                     : "model not served by this worker"));
  }
  if (outcome == Outcome::kBadInput || outcome == Outcome::kInferenceFailed) {
    spdlog::info("rid={} item={} {}: {}", item.request_id, item.index, CodeName(error.code()),
                 error.message());
  } else {
    spdlog::debug("rid={} item={} outcome={}", item.request_id, item.index, OutcomeName(outcome));
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

void BatchRunner::PublishResult(const WorkItem& item, std::string_view payload, ResultMeta meta,
                                int64_t queue_us, int64_t inference_us) {
  const std::string reply(item.reply);
  const size_t part_bytes = PartBytes();
  // One message when it fits, else parts that each carry every header.
  const size_t parts = payload.size() <= part_bytes ? 1 : (payload.size() + part_bytes - 1) / part_bytes;
  for (size_t k = 0; k < parts; ++k) {
    const std::string_view piece = parts == 1 ? payload : payload.substr(k * part_bytes, part_bytes);
    natsMsg* m = nullptr;
    if (natsMsg_Create(&m, reply.c_str(), nullptr, piece.data(), static_cast<int>(piece.size())) != NATS_OK) {
      return;
    }
    queue::MsgPtr msg(m);
    natsMsgHeader_Set(m, wire::kHeaderItem, std::to_string(item.index).c_str());
    natsMsgHeader_Set(m, wire::kHeaderTokens, std::to_string(meta.tokens).c_str());
    if (meta.truncated) natsMsgHeader_Set(m, wire::kHeaderTruncated, "1");
    if (item.enqueued_us < item.model->loaded_unix_us) natsMsgHeader_Set(m, wire::kHeaderColdStart, "1");
    natsMsgHeader_Set(m, wire::kHeaderQueueUs, std::to_string(queue_us).c_str());
    natsMsgHeader_Set(m, wire::kHeaderInferenceUs, std::to_string(inference_us).c_str());
    natsMsgHeader_Set(m, wire::kHeaderWorker, worker_id_.c_str());
    natsMsgHeader_Set(m, wire::kHeaderAttempt, std::to_string(item.delivered).c_str());
    if (parts > 1) {
      natsMsgHeader_Set(m, wire::kHeaderPart, std::to_string(k).c_str());
      natsMsgHeader_Set(m, wire::kHeaderParts, std::to_string(parts).c_str());
    }
    if (natsStatus s = natsConnection_PublishMsg(nc_, m); s != NATS_OK) {
      spdlog::warn("rid={} result not published: {}", item.request_id, natsStatus_GetText(s));
    }
    reaper_->Add(std::move(msg));
  }
}

void BatchRunner::PublishError(const WorkItem& item, const Status& error) {
  const std::string reply(item.reply);
  natsMsg* m = nullptr;
  const std::string& text = error.message();
  if (natsMsg_Create(&m, reply.c_str(), nullptr, text.data(), static_cast<int>(text.size())) != NATS_OK) {
    return;
  }
  queue::MsgPtr msg(m);
  natsMsgHeader_Set(m, wire::kHeaderItem, std::to_string(item.index).c_str());
  natsMsgHeader_Set(m, wire::kHeaderError, std::string(CodeName(error.code())).c_str());
  natsMsgHeader_Set(m, wire::kHeaderWorker, worker_id_.c_str());
  natsConnection_PublishMsg(nc_, m);
  reaper_->Add(std::move(msg));
}

void BatchRunner::Ack(const WorkItem& item, AckAction action, std::chrono::milliseconds delay) {
  if (!item.HasAck()) return;  // pushed over core NATS: nobody to settle with
  const std::string ack(item.ack);
  const std::string body = AckBody(action, delay);
  natsConnection_Publish(nc_, ack.c_str(), body.data(), static_cast<int>(body.size()));
}

}  // namespace shoal::worker
