#include "support/in_flight_probe.h"

#include <string_view>

#include "queue/message.h"
#include "wire/work_message.h"

namespace shoal::testing {
namespace {

std::string ItemKey(std::string_view reply, uint32_t item) { return std::string(reply) + "#" + std::to_string(item); }

}  // namespace

Result<std::unique_ptr<InFlightProbe>> InFlightProbe::Start(const std::string& nats_url,
                                                           const std::string& worker_id) {
  std::unique_ptr<InFlightProbe> p(new InFlightProbe());
  auto nc = queue::Connect({.url = nats_url, .name = "in-flight-probe " + worker_id});
  if (!nc.ok()) return nc.status();
  p->nc_ = std::move(nc).value();
  const std::string deliveries = "_SHOAL.pull." + worker_id + ".>";
  natsSubscription* sub = nullptr;
  SHOAL_RETURN_IF_ERROR(queue::FromNats(
      natsConnection_Subscribe(&sub, p->nc_.get(), deliveries.c_str(), OnDelivery, p.get()), deliveries));
  p->deliveries_.reset(sub);
  SHOAL_RETURN_IF_ERROR(
      queue::FromNats(natsConnection_Subscribe(&sub, p->nc_.get(), "$JS.ACK.>", OnAck, p.get()), "$JS.ACK.>"));
  p->acks_.reset(sub);
  SHOAL_RETURN_IF_ERROR(
      queue::FromNats(natsConnection_Subscribe(&sub, p->nc_.get(), "_INBOX.>", OnResult, p.get()), "_INBOX.>"));
  p->results_.reset(sub);
  // The subscriptions are in place at the server once a round trip is done.
  SHOAL_RETURN_IF_ERROR(queue::FromNats(natsConnection_FlushTimeout(p->nc_.get(), 5000), "probe flush"));
  return p;
}

InFlightProbe::~InFlightProbe() {
  // Unsubscribe first: callbacks must not run on a destroyed probe.
  for (auto* s : {&deliveries_, &acks_, &results_}) {
    if (*s) natsSubscription_Unsubscribe(s->get());
    s->reset();
  }
  nc_.reset();
}

size_t InFlightProbe::Held() {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [ack, key] : held_) n += answered_.count(key) == 0;
  return n;
}

size_t InFlightProbe::Delivered() {
  std::lock_guard lock(mu_);
  return delivered_;
}

void InFlightProbe::OnDelivery(natsConnection*, natsSubscription*, natsMsg* msg, void* self) {
  const queue::Message m{queue::MsgPtr(msg)};
  // Pull-protocol status messages (heartbeats, expiries) carry no ack subject.
  if (!m.reply().starts_with("$JS.ACK.")) return;
  wire::WorkHeader work;
  std::string_view body;
  if (!wire::ReadWork(m.payload(), &work, &body).ok()) return;
  auto* p = static_cast<InFlightProbe*>(self);
  std::string key = ItemKey(work.reply, work.item);
  std::lock_guard lock(p->mu_);
  p->held_[std::string(m.reply())] = std::move(key);
  ++p->delivered_;
}

void InFlightProbe::OnAck(natsConnection*, natsSubscription*, natsMsg* msg, void* self) {
  const queue::Message m{queue::MsgPtr(msg)};
  if (m.payload().starts_with("+WPI")) return;  // "still working": still held
  auto* p = static_cast<InFlightProbe*>(self);
  std::lock_guard lock(p->mu_);
  p->held_.erase(std::string(m.subject()));
}

void InFlightProbe::OnResult(natsConnection*, natsSubscription*, natsMsg* msg, void* self) {
  const queue::Message m{queue::MsgPtr(msg)};
  wire::ReplyHeader h;
  std::string_view body;
  if (!wire::ReadReply(m.payload(), &h, &body).ok()) return;  // not a Shoal reply (a publish ack, say)
  auto* p = static_cast<InFlightProbe*>(self);
  std::string key = ItemKey(m.subject(), h.item);
  std::lock_guard lock(p->mu_);
  p->answered_.insert(std::move(key));
}

}  // namespace shoal::testing
