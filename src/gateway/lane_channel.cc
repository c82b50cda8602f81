#include "gateway/lane_channel.h"

#include "common/numbers.h"
#include "gateway/generation.h"
#include "gateway/responses.h"
#include "queue/loop_connection.h"
#include "wire/generate.h"
#include "queue/subjects.h"
#include "wire/work_message.h"

namespace shoal::gateway {

LaneChannel::LaneChannel(EventLoop* loop, std::string lane_id, PendingTable* table)
    : loop_(loop), lane_id_(std::move(lane_id)), reply_prefix_("_INBOX." + lane_id_ + "."), table_(table) {}

LaneChannel::~LaneChannel() = default;

Status LaneChannel::Start(const queue::ConnectOptions& nats, OnAck on_ack, OnApplied on_applied) {
  on_ack_ = std::move(on_ack);
  on_applied_ = std::move(on_applied);
  queue::ConnectOptions options = nats;
  options.name = "shoal-gateway " + lane_id_;
  auto nc = queue::ConnectOnLoop(options, loop_, [this] {
    if (!sub_) return;
    queue::DrainSubscription(sub_.get(), [this](queue::MsgPtr m) {
      OnReply(m.get());
      reaper_.Add(std::move(m));
    });
  });
  if (!nc.ok()) return nc.status();
  nc_ = std::move(nc).value();
  Status status;
  loop_->RunAndWait([&] {  // sub_ is the loop's alone
    natsSubscription* sub = nullptr;
    status = queue::FromNats(
        natsConnection_SubscribeSync(&sub, nc_.get(), queue::ReplyWildcard(lane_id_).c_str()),
        "result inbox");
    if (!status.ok()) return;
    natsSubscription_SetPendingLimits(sub, -1, -1);
    sub_.reset(sub);
  });
  return status;
}

int64_t LaneChannel::MaxPayload() const { return natsConnection_GetMaxPayload(nc_.get()); }

void LaneChannel::Stop() {
  if (sub_) natsSubscription_Unsubscribe(sub_.get());
  sub_.reset();
  nc_.reset();
}

uint64_t LaneChannel::Reconnects() const {
  natsStatistics* stats = nullptr;
  if (natsStatistics_Create(&stats) != NATS_OK) return 0;
  uint64_t reconnects = 0;
  if (natsConnection_GetStats(nc_.get(), stats) == NATS_OK) {
    natsStatistics_GetCounts(stats, nullptr, nullptr, nullptr, nullptr, &reconnects);
  }
  natsStatistics_Destroy(stats);
  return reconnects;
}

Status LaneChannel::PublishItems(PendingRequest& p, const std::string& subject, bool jetstream_ack,
                                 const std::vector<size_t>* only) {
  const std::string reply = queue::ReplySubject(lane_id_, p.seq);
  const std::string ack_prefix = reply + wire::kAckSuffix;
  std::string ack_reply;
  const std::string deadline = std::to_string(p.deadline_unix_ms);
  const std::string task(p.generation ? std::string_view(wire::kTaskGenerate)
                                      : wire::TaskName(p.request.task));
  const size_t n = only ? only->size() : p.request.items.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = only ? (*only)[k] : k;
    const auto& item = p.request.items[i];
    // An offloaded item's bytes wait in the payload store; its message is empty.
    const std::string_view body = item.offloaded ? std::string_view() : item.payload;
    natsMsg* raw = nullptr;
    if (jetstream_ack) ack_reply = ack_prefix + std::to_string(i);
    natsStatus s = natsMsg_Create(&raw, subject.c_str(), jetstream_ack ? ack_reply.c_str() : nullptr,
                                  body.data(), static_cast<int>(body.size()));
    if (s != NATS_OK) return queue::FromNats(s, "work message");
    queue::MsgPtr m(raw);
    const std::string index = std::to_string(i);
    natsMsgHeader_Set(raw, wire::kHeaderRequestId, p.id.c_str());
    natsMsgHeader_Set(raw, wire::kHeaderItem, index.c_str());
    natsMsgHeader_Set(raw, wire::kHeaderCost, std::to_string(item.cost).c_str());
    natsMsgHeader_Set(raw, wire::kHeaderDeadline, deadline.c_str());
    natsMsgHeader_Set(raw, wire::kHeaderReply, reply.c_str());
    natsMsgHeader_Set(raw, wire::kHeaderTask, task.c_str());
    if (p.request.options.truncate) natsMsgHeader_Set(raw, wire::kHeaderTruncate, "1");
    if (!p.request.options.normalize) natsMsgHeader_Set(raw, wire::kHeaderNormalize, "0");
    if (!p.request.lora.empty()) natsMsgHeader_Set(raw, wire::kHeaderLora, p.request.lora.c_str());
    if (item.offloaded) natsMsgHeader_Set(raw, wire::kHeaderPayload, wire::PayloadKey(p.id, i).c_str());
    s = natsConnection_PublishMsg(nc_.get(), raw);
    if (s != NATS_OK) return queue::FromNats(s, "queueing work");
    reaper_.Add(std::move(m));
  }
  return Status::Ok();
}

void LaneChannel::PublishCancel(const PendingRequest& p) {
  const std::string notice = p.id + " " + std::to_string(p.deadline_unix_ms);
  natsConnection_Publish(nc_.get(), queue::CancelSubject(p.model->pool).c_str(), notice.data(),
                         static_cast<int>(notice.size()));
}

void LaneChannel::OnReply(natsMsg* msg) {
  std::string_view subject = natsMsg_GetSubject(msg);
  if (subject.size() <= reply_prefix_.size()) return;
  subject.remove_prefix(reply_prefix_.size());
  uint64_t item = 0;
  const size_t ack_at = subject.find(wire::kAckSuffix);
  const bool is_ack = ack_at != std::string_view::npos;
  if (is_ack) {
    if (!ParseU64(subject.substr(ack_at + sizeof(wire::kAckSuffix) - 1), &item)) return;
    subject = subject.substr(0, ack_at);
  }
  uint64_t seq = 0;
  if (!ParseU64(subject, &seq)) return;
  auto p = table_->Find(seq);
  if (!p) return;  // finished already (answered, failed or timed out)
  if (is_ack) {
    if (on_ack_) on_ack_(*p, static_cast<size_t>(item), msg);
  } else {
    OnResult(*p, msg);
  }
}

void LaneChannel::OnGenerationChunk(PendingRequest& p, natsMsg* msg) {
  ChunkMessage m;
  m.error = queue::Header(msg, wire::kHeaderError);
  m.payload = queue::Payload(msg);
  if (m.error.empty() && !ParseU64(queue::Header(msg, wire::kHeaderSeq), &m.seq)) return;
  m.final = queue::Header(msg, wire::kHeaderFinal) == "1";
  uint64_t attempt = 1;
  if (ParseU64(queue::Header(msg, wire::kHeaderAttempt), &attempt)) {
    m.attempt = static_cast<uint32_t>(attempt);
  }
  OnGenerationResult(*table_, p, m);
  // A generation is one item: it is applied when it ends, not per chunk.
  if (p.finished && on_applied_) on_applied_(p);
}

bool LaneChannel::AddPart(ItemResult& r, natsMsg* msg) {
  uint64_t part = 0, parts = 0, attempt = 1;
  if (!ParseU64(queue::Header(msg, wire::kHeaderPart), &part) ||
      !ParseU64(queue::Header(msg, wire::kHeaderParts), &parts) || parts == 0 || part >= parts ||
      parts > wire::kMaxResultParts) {
    return false;  // malformed: the deadline answers the request
  }
  ParseU64(queue::Header(msg, wire::kHeaderAttempt), &attempt);
  // Parts of one attempt only: a redelivery may overlap a slow first try,
  // and their bytes need not match. The later attempt wins.
  if (attempt < r.parts_attempt) return false;
  if (attempt > r.parts_attempt || r.parts.size() != parts) {
    r.parts.assign(parts, {});
    r.parts_received = 0;
    r.parts_attempt = static_cast<uint32_t>(attempt);
  }
  if (!r.parts[part].empty()) return false;  // a duplicate
  r.parts[part].assign(queue::Payload(msg));
  if (r.parts[part].empty()) return false;  // parts are never empty
  if (++r.parts_received < parts) return false;
  r.payload.clear();
  for (std::string& piece : r.parts) r.payload += piece;
  r.parts = {};
  return true;
}

void LaneChannel::OnResult(PendingRequest& p, natsMsg* msg) {
  if (p.generation) return OnGenerationChunk(p, msg);
  uint64_t index = 0;
  if (!ParseU64(queue::Header(msg, wire::kHeaderItem), &index)) return;
  if (const std::string_view code = queue::Header(msg, wire::kHeaderError); !code.empty()) {
    table_->Finish(p, ItemErrorResponse(p, index, Status(CodeFromName(code),
                                                         std::string(queue::Payload(msg)))));
    if (on_applied_) on_applied_(p);
    return;
  }
  bool complete = false;
  {
    if (index >= p.results.size() || p.results[index].filled) return;
    ItemResult& r = p.results[index];
    uint64_t v = 0;
    if (queue::Header(msg, wire::kHeaderParts).empty()) {
      r.payload.assign(queue::Payload(msg));
    } else if (!AddPart(r, msg)) {
      return;  // more parts to come
    }
    r.filled = true;
    if (ParseU64(queue::Header(msg, wire::kHeaderTokens), &v)) r.tokens = static_cast<uint32_t>(v);
    r.truncated = queue::Header(msg, wire::kHeaderTruncated) == "1";
    r.cold_start = queue::Header(msg, wire::kHeaderColdStart) == "1";
    if (ParseU64(queue::Header(msg, wire::kHeaderQueueUs), &v)) r.queue_us = static_cast<int64_t>(v);
    if (ParseU64(queue::Header(msg, wire::kHeaderInferenceUs), &v)) r.inference_us = static_cast<int64_t>(v);
    if (ParseU64(queue::Header(msg, wire::kHeaderAttempt), &v)) r.attempt = static_cast<uint32_t>(v);
    complete = --p.remaining == 0;
  }
  if (complete && !p.finished) table_->Finish(p, ComposeResponse(p));
  if (on_applied_) on_applied_(p);
}

}  // namespace shoal::gateway
