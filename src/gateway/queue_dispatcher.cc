#include "gateway/queue_dispatcher.h"

#include "common/log.h"
#include "gateway/responses.h"
#include "wire/subjects.h"
#include "wire/work_message.h"

namespace shoal::gateway {

QueueDispatcher::QueueDispatcher(EventLoop* loop, std::string lane_id,
                                 const queue::WorkerRegistry* workers, PendingTable* table,
                                 QueueDispatcherOptions options)
    : workers_(workers), table_(table), options_(options), channel_(loop, std::move(lane_id), table) {}

QueueDispatcher::~QueueDispatcher() = default;

Status QueueDispatcher::Start(const queue::ConnectOptions& nats) {
  return channel_.Start(
      nats, [this](PendingRequest& p, natsMsg* msg) { OnPublishAck(p, msg); }, {});
}

int64_t QueueDispatcher::MaxPayload() const { return channel_.MaxPayload(); }

void QueueDispatcher::Stop() {
  for (auto& w : waiting_) {
    table_->Finish(*w.request, ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"),
                                             w.request->id));
  }
  waiting_.clear();
  channel_.Stop();
}

void QueueDispatcher::Cancel(const PendingRequest& p) {
  if (channel_.connected()) channel_.PublishCancel(p);
}

bool QueueDispatcher::HasCapacity(std::string_view model_id) const {
  return workers_->AnyServing(model_id);
}

void QueueDispatcher::Submit(const std::shared_ptr<PendingRequest>& p) {
  if (!channel_.connected()) {  // stopped: the gateway is going away
    table_->Finish(*p, ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), p->id));
    return;
  }
  if (HasCapacity(p->model->id)) return Publish(*p);
  waiting_.push_back({p, SteadyClock::now() + options_.no_capacity_wait});
}

void QueueDispatcher::Tick(SteadyClock::time_point now) {
  channel_.Reap();
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
  if (Status s = channel_.PublishItems(p, wire::WorkSubject(spec.pool, spec.id), /*jetstream_ack=*/true);
      !s.ok()) {
    // Items already published may still run; their results will be ignored.
    table_->Finish(p, ErrorResponse(s, p.id));
  }
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

}  // namespace shoal::gateway
