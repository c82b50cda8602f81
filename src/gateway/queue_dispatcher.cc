#include "gateway/queue_dispatcher.h"

#include "common/log.h"
#include "gateway/responses.h"
#include "queue/loop_connection.h"
#include "wire/subjects.h"
#include "wire/work_message.h"

namespace shoal::gateway {

QueueDispatcher::QueueDispatcher(EventLoop* loop, std::string lane_id,
                                 const queue::WorkerRegistry* workers, PendingTable* table,
                                 QueueDispatcherOptions options)
    : loop_(loop),
      lane_id_(std::move(lane_id)),
      reply_prefix_("_INBOX." + lane_id_ + "."),
      workers_(workers),
      table_(table),
      options_(options) {}

QueueDispatcher::~QueueDispatcher() = default;

Status QueueDispatcher::Start(const std::string& nats_url) {
  auto nc = queue::ConnectOnLoop({.url = nats_url, .name = "shoal-gateway " + lane_id_}, loop_, [this] {
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
        natsConnection_SubscribeSync(&sub, nc_.get(), wire::ReplyWildcard(lane_id_).c_str()),
        "result inbox");
    if (!status.ok()) return;
    natsSubscription_SetPendingLimits(sub, -1, -1);
    sub_.reset(sub);
  });
  return status;
}

int64_t QueueDispatcher::MaxPayload() const { return natsConnection_GetMaxPayload(nc_.get()); }

void QueueDispatcher::Stop() {
  for (auto& w : waiting_) {
    table_->Finish(*w.request, ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"),
                                             w.request->id));
  }
  waiting_.clear();
  if (sub_) natsSubscription_Unsubscribe(sub_.get());
  sub_.reset();
  nc_.reset();
}

bool QueueDispatcher::HasCapacity(std::string_view model_id) const {
  return workers_->AnyServing(model_id);
}

void QueueDispatcher::Submit(const std::shared_ptr<PendingRequest>& p) {
  if (!nc_) {  // stopped: the gateway is going away
    table_->Finish(*p, ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), p->id));
    return;
  }
  if (HasCapacity(p->model->id)) return Publish(*p);
  waiting_.push_back({p, SteadyClock::now() + options_.no_capacity_wait});
}

void QueueDispatcher::Tick(SteadyClock::time_point now) {
  reaper_.Reap();
  if (waiting_.empty()) return;
  std::vector<Waiting> ready, expired;
  for (auto& w : waiting_) {
    if (w.request->finished) continue;
    if (HasCapacity(w.request->model->id)) ready.push_back(std::move(w));
    else if (now >= w.give_up) expired.push_back(std::move(w));
  }
  std::erase_if(waiting_, [](const Waiting& w) { return !w.request || w.request->finished; });
  for (auto& w : ready) Publish(*w.request);
  for (auto& w : expired) {
    table_->Finish(*w.request,
                   ErrorResponse(Status(Code::kNoCapacity, "no worker is serving model '" +
                                                               w.request->model->id + "'"),
                                 w.request->id));
  }
}

void QueueDispatcher::Publish(PendingRequest& p) {
  const ModelSpec& spec = *p.model;
  const std::string subject = wire::WorkSubject(spec.pool, spec.id);
  const std::string reply = wire::ReplySubject(lane_id_, p.seq);
  const std::string ack_reply = reply + wire::kAckSuffix;
  const std::string deadline = std::to_string(p.deadline_unix_ms);
  for (size_t i = 0; i < p.request.items.size(); ++i) {
    const auto& item = p.request.items[i];
    natsMsg* raw = nullptr;
    natsStatus s = natsMsg_Create(&raw, subject.c_str(), ack_reply.c_str(), item.payload.data(),
                                  static_cast<int>(item.payload.size()));
    if (s != NATS_OK) {
      table_->Finish(p, ErrorResponse(queue::FromNats(s, "work message"), p.id));
      return;
    }
    queue::MsgPtr m(raw);
    const std::string index = std::to_string(i);
    natsMsgHeader_Set(raw, wire::kHeaderRequestId, p.id.c_str());
    natsMsgHeader_Set(raw, wire::kHeaderItem, index.c_str());
    natsMsgHeader_Set(raw, wire::kHeaderCost, std::to_string(item.cost).c_str());
    natsMsgHeader_Set(raw, wire::kHeaderDeadline, deadline.c_str());
    natsMsgHeader_Set(raw, wire::kHeaderReply, reply.c_str());
    natsMsgHeader_Set(raw, wire::kHeaderTask, std::string(wire::TaskName(p.request.task)).c_str());
    if (p.request.options.truncate) natsMsgHeader_Set(raw, wire::kHeaderTruncate, "1");
    if (!p.request.options.normalize) natsMsgHeader_Set(raw, wire::kHeaderNormalize, "0");
    s = natsConnection_PublishMsg(nc_.get(), raw);
    if (s != NATS_OK) {
      // Items already published may still run; their results will be ignored.
      table_->Finish(p, ErrorResponse(queue::FromNats(s, "queueing work"), p.id));
      return;
    }
    reaper_.Add(std::move(m));
  }
}

void QueueDispatcher::OnReply(natsMsg* msg) {
  std::string_view subject = natsMsg_GetSubject(msg);
  if (subject.size() <= reply_prefix_.size()) return;
  subject.remove_prefix(reply_prefix_.size());
  const bool is_ack = subject.ends_with(wire::kAckSuffix);
  if (is_ack) subject.remove_suffix(sizeof(wire::kAckSuffix) - 1);
  uint64_t seq = 0;
  if (!wire::ParseU64(subject, &seq)) return;
  auto p = table_->Find(seq);
  if (!p) return;  // finished already (answered, failed or timed out)
  if (is_ack) OnPublishAck(*p, msg); else OnResult(*p, msg);
}

void QueueDispatcher::OnPublishAck(PendingRequest& p, natsMsg* msg) {
  const std::string_view body = queue::Payload(msg);
  if (body.empty()) {
    // A status message: 503 "no responders" means no stream takes the subject.
    if (natsMsg_IsNoResponders(msg)) {
      table_->Finish(p, ErrorResponse(Status(Code::kNoCapacity, "no work stream for pool '" +
                                                                    p.model->pool + "'"),
                                      p.id));
    }
    return;
  }
  if (body.find("\"error\"") == std::string_view::npos) return;  // stored
  // {"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}
  const bool full = body.find("maximum") != std::string_view::npos ||
                    body.find("resources") != std::string_view::npos;
  spdlog::warn("rid={} publish rejected: {}", p.id, body);
  table_->Finish(p, ErrorResponse(full ? Status(Code::kOverloaded, "the work queue is full")
                                       : Status(Code::kNoCapacity, "the work queue rejected the request"),
                                  p.id));
}

void QueueDispatcher::OnResult(PendingRequest& p, natsMsg* msg) {
  uint64_t index = 0;
  if (!wire::ParseU64(queue::Header(msg, wire::kHeaderItem), &index)) return;
  if (const std::string_view code = queue::Header(msg, wire::kHeaderError); !code.empty()) {
    table_->Finish(p, ItemErrorResponse(p, index, Status(CodeFromName(code),
                                                         std::string(queue::Payload(msg)))));
    return;
  }
  bool complete = false;
  {
    if (index >= p.results.size() || p.results[index].filled) return;
    ItemResult& r = p.results[index];
    r.filled = true;
    r.payload.assign(queue::Payload(msg));
    uint64_t v = 0;
    if (wire::ParseU64(queue::Header(msg, wire::kHeaderTokens), &v)) r.tokens = static_cast<uint32_t>(v);
    r.truncated = queue::Header(msg, wire::kHeaderTruncated) == "1";
    if (wire::ParseU64(queue::Header(msg, wire::kHeaderQueueUs), &v)) r.queue_us = static_cast<int64_t>(v);
    if (wire::ParseU64(queue::Header(msg, wire::kHeaderInferenceUs), &v)) r.inference_us = static_cast<int64_t>(v);
    if (wire::ParseU64(queue::Header(msg, wire::kHeaderAttempt), &v)) r.attempt = static_cast<uint32_t>(v);
    complete = --p.remaining == 0;
  }
  if (complete && !p.finished) table_->Finish(p, ComposeResponse(p));
}

}  // namespace shoal::gateway
