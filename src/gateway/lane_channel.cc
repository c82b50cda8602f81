#include "gateway/lane_channel.h"

#include "common/log.h"
#include "common/numbers.h"
#include "queue/loop_connection.h"
#include "queue/subjects.h"

namespace shoal::gateway {

LaneChannel::LaneChannel(EventLoop* loop, std::string lane_id, PendingTable* table)
    : loop_(loop), lane_id_(std::move(lane_id)), reply_prefix_("_INBOX." + lane_id_ + "."), table_(table) {}

LaneChannel::~LaneChannel() = default;

Status LaneChannel::Start(const queue::ConnectOptions& nats, OnAck on_ack, OnReply on_reply) {
  on_ack_ = std::move(on_ack);
  on_reply_ = std::move(on_reply);
  queue::ConnectOptions options = nats;
  options.name = "shoal-gateway " + lane_id_;
  auto nc = queue::ConnectOnLoop(options, loop_, [this] {
    if (!sub_) return;
    queue::DrainSubscription(sub_.get(), [this](queue::Message m) { OnMessage(std::move(m)); });
  });
  if (!nc.ok()) return nc.status();
  nc_ = std::move(nc).value();
  Status status;
  loop_->RunAndWait([&] {  // sub_ is the loop's alone
    natsSubscription* sub = nullptr;
    status = queue::FromNats(
        natsConnection_SubscribeSync(&sub, nc_.get(), queue::ReplyWildcard(lane_id_).c_str()), "result inbox");
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
  wire::WorkHeader h;
  h.request_id = p.id;
  h.deadline_unix_ms = p.deadline_unix_ms;
  h.reply = reply;
  h.task = p.generation ? Task::kGenerate : p.request.task;
  h.truncate = p.request.options.truncate;
  h.normalize = p.request.options.normalize;
  h.lora = p.request.lora;
  h.aggregation = p.request.extract.aggregation;
  h.top_k = p.request.extract.top_k;
  h.outputs = p.request.options.outputs;
  h.role = p.request.options.role;
  h.sparse_top_k = p.request.options.sparse_top_k;
  h.sparse_tokens = p.request.options.sparse_tokens;
  const std::string trace = p.trace.valid() ? FormatTraceparent(p.trace) : std::string();
  h.trace = trace;
  const size_t n = only ? only->size() : p.request.items.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = only ? (*only)[k] : k;
    const auto& item = p.request.items[i];
    h.item = static_cast<uint32_t>(i);
    h.cost = item.cost;
    // An offloaded item's bytes wait in the payload store; its message names them.
    const std::string key = item.offloaded ? wire::PayloadKey(p.id, i) : std::string();
    h.payload_key = key;
    buffer_.clear();
    wire::AppendWork(h, item.offloaded ? std::string_view() : item.payload, &buffer_);
    if (jetstream_ack) ack_reply = ack_prefix + std::to_string(i);
    SHOAL_RETURN_IF_ERROR(queue::Publish(nc_.get(), subject, buffer_, jetstream_ack ? ack_reply.c_str() : nullptr));
  }
  return Status::Ok();
}

void LaneChannel::PublishCancel(const PendingRequest& p) {
  const std::string notice = p.id + " " + std::to_string(p.deadline_unix_ms);
  (void)queue::Publish(nc_.get(), queue::CancelSubject(p.model->pool), notice);
}

void LaneChannel::OnMessage(queue::Message msg) {
  std::string_view subject = msg.subject();
  if (subject.size() <= reply_prefix_.size()) return table_->Free(std::move(msg));
  subject.remove_prefix(reply_prefix_.size());
  uint64_t item = 0;
  const size_t ack_at = subject.find(wire::kAckSuffix);
  const bool is_ack = ack_at != std::string_view::npos;
  if (is_ack) {
    if (!ParseU64(subject.substr(ack_at + sizeof(wire::kAckSuffix) - 1), &item)) return table_->Free(std::move(msg));
    subject = subject.substr(0, ack_at);
  }
  uint64_t seq = 0;
  std::shared_ptr<PendingRequest> p;
  if (ParseU64(subject, &seq)) p = table_->Find(seq);
  if (!p) return table_->Free(std::move(msg));  // finished already (answered, failed or timed out)
  if (is_ack) {
    if (on_ack_) on_ack_(*p, static_cast<size_t>(item), msg);
    return table_->Free(std::move(msg));
  }
  wire::ReplyHeader h;
  std::string_view body;
  if (Status s = wire::ReadReply(msg.payload(), &h, &body); !s.ok()) {
    // Not from a worker of this version: the deadline answers the request.
    spdlog::warn("rid={} unreadable reply dropped: {}", p->id, s.message());
    return table_->Free(std::move(msg));
  }
  on_reply_(*p, h, body, std::move(msg));
}

}  // namespace shoal::gateway
