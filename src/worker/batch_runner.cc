#include "worker/batch_runner.h"

#include "common/log.h"
#include "wire/work_message.h"

namespace shoal::worker {

void BatchRunner::Run(std::vector<WorkItem>& batch) {
  if (batch.empty()) return;
  ServedModel& served = *batch.front().model;
  const int64_t start_wall_us = UnixMicros();
  const int64_t now_ms = start_wall_us / 1000;

  // Items worth running: not expired, decodable.
  std::vector<size_t> live;
  std::vector<EncodeInput> inputs;
  live.reserve(batch.size());
  inputs.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const WorkItem& it = batch[i];
    if (it.deadline_ms > 0 && now_ms >= it.deadline_ms) {
      Settle(it, Outcome::kExpired);
      continue;
    }
    EncodeInput in;
    if (Status s = wire::DecodeTextItem(it.payload, &in.text); !s.ok()) {
      Settle(it, Outcome::kBadInput, s);
      continue;
    }
    in.truncate = it.truncate;
    in.normalize = it.normalize;
    live.push_back(i);
    inputs.push_back(in);
  }

  if (!inputs.empty()) {
    std::vector<EncodeOutput> outputs(inputs.size());
    const auto t0 = SteadyClock::now();
    Status batch_status = served.model->Encode(inputs, outputs);
    const int64_t inference_us = MicrosSince(t0);

    std::string payload;
    for (size_t k = 0; k < live.size(); ++k) {
      const WorkItem& it = batch[live[k]];
      if (!batch_status.ok()) {
        Settle(it, Outcome::kInferenceFailed, Status(Code::kInferenceError, batch_status.message()));
        continue;
      }
      EncodeOutput& out = outputs[k];
      if (!out.status.ok()) {
        Settle(it, out.status.code() == Code::kInvalidInput ? Outcome::kBadInput
                                                            : Outcome::kInferenceFailed,
               out.status);
        continue;
      }
      payload.clear();
      wire::AppendDenseResult(out.dense.data(), out.dense.size(), &payload);
      PublishResult(it, payload, out.tokens, std::max<int64_t>(0, start_wall_us - it.enqueued_us),
                    inference_us);
      Ack(it, DispositionFor(Outcome::kSucceeded).action, {});
    }
    if (!batch_status.ok()) {
      spdlog::error("batch of {} on {} failed: {}", inputs.size(), served.spec->id,
                    batch_status.ToString());
    }
  }
  served.in_flight.fetch_sub(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
}

void BatchRunner::Settle(const WorkItem& item, Outcome outcome, const Status& error) {
  const Disposition d = DispositionFor(outcome);
  if (d.reply) PublishError(item, error);
  if (outcome == Outcome::kBadInput || outcome == Outcome::kInferenceFailed) {
    spdlog::info("rid={} item={} {}: {}", item.request_id, item.index, CodeName(error.code()),
                 error.message());
  }
  Ack(item, d.action, d.nak_delay);
}

void BatchRunner::Progress(const WorkItem& item) { Ack(item, AckAction::kInProgress, {}); }

void BatchRunner::PublishResult(const WorkItem& item, std::string_view payload, uint32_t tokens,
                                int64_t queue_us, int64_t inference_us) {
  const std::string reply(item.reply);
  natsMsg* m = nullptr;
  if (natsMsg_Create(&m, reply.c_str(), nullptr, payload.data(), static_cast<int>(payload.size())) !=
      NATS_OK) {
    return;
  }
  queue::MsgPtr msg(m);
  natsMsgHeader_Set(m, wire::kHeaderItem, std::to_string(item.index).c_str());
  natsMsgHeader_Set(m, wire::kHeaderTokens, std::to_string(tokens).c_str());
  natsMsgHeader_Set(m, wire::kHeaderQueueUs, std::to_string(queue_us).c_str());
  natsMsgHeader_Set(m, wire::kHeaderInferenceUs, std::to_string(inference_us).c_str());
  natsMsgHeader_Set(m, wire::kHeaderWorker, worker_id_.c_str());
  natsMsgHeader_Set(m, wire::kHeaderAttempt, std::to_string(item.delivered).c_str());
  if (natsStatus s = natsConnection_PublishMsg(nc_, m); s != NATS_OK) {
    spdlog::warn("rid={} result not published: {}", item.request_id, natsStatus_GetText(s));
  }
  reaper_->Add(std::move(msg));
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
  const std::string ack(item.ack);
  const std::string body = AckBody(action, delay);
  natsConnection_Publish(nc_, ack.c_str(), body.data(), static_cast<int>(body.size()));
}

}  // namespace shoal::worker
