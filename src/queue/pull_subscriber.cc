#include "queue/pull_subscriber.h"

#include <algorithm>
#include <charconv>

#include "common/log.h"
#include "queue/loop_connection.h"
#include "wire/work_message.h"

namespace shoal::queue {
namespace {

// Splits `s` on '.' into at most `max` views; returns how many.
size_t SplitTokens(std::string_view s, std::string_view* out, size_t max) {
  size_t n = 0;
  while (n < max) {
    const size_t dot = s.find('.');
    out[n++] = s.substr(0, dot);
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  return n;
}

}  // namespace

PullSubscriber::PullSubscriber(std::string inbox_prefix, OnMessage on_message, PullTiming timing)
    : inbox_prefix_(std::move(inbox_prefix)), on_message_(std::move(on_message)), timing_(timing) {}

PullSubscriber::~PullSubscriber() { Stop(); }

Status PullSubscriber::Start(natsConnection* nc, EventLoop* loop) {
  nc_ = nc;
  Status status;
  loop->RunAndWait([&] {
    natsSubscription* sub = nullptr;
    const std::string wildcard = inbox_prefix_ + ".>";
    status = FromNats(natsConnection_SubscribeSync(&sub, nc_, wildcard.c_str()), "pull inbox");
    if (!status.ok()) return;
    // Deliveries are bounded by credit; never let cnats drop one as a slow consumer.
    natsSubscription_SetPendingLimits(sub, -1, -1);
    sub_.reset(sub);
  });
  SHOAL_RETURN_IF_ERROR(status);
  std::lock_guard lock(mu_);
  refilling_ = true;
  return Status::Ok();
}

void PullSubscriber::Drain() {
  if (!sub_) return;
  DrainSubscription(sub_.get(), [this](MsgPtr msg) { HandleMessage(std::move(msg)); });
}

void PullSubscriber::Stop() {
  {
    std::lock_guard lock(mu_);
    refilling_ = false;
  }
  if (!sub_) return;
  Drain();
  natsSubscription_Unsubscribe(sub_.get());
  sub_.reset();
}

int PullSubscriber::AddConsumer(std::string stream, std::string consumer) {
  std::lock_guard lock(mu_);
  if (auto it = by_name_.find(consumer); it != by_name_.end()) {
    slots_[it->second].enabled = true;
    return it->second;
  }
  Slot s;
  s.next_subject = "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer;
  s.stream = std::move(stream);
  s.consumer = consumer;
  slots_.push_back(std::move(s));
  const int slot = static_cast<int>(slots_.size()) - 1;
  by_name_.emplace(std::move(consumer), slot);
  return slot;
}

void PullSubscriber::DisableConsumer(int slot) {
  std::lock_guard lock(mu_);
  slots_[slot].enabled = false;
}

void PullSubscriber::StopRefilling() {
  std::lock_guard lock(mu_);
  refilling_ = false;
}

void PullSubscriber::Refill(int slot, int64_t want) {
  std::string subject, reply;
  int64_t batch = 0;
  uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    Slot& s = slots_[slot];
    if (!refilling_ || !s.enabled) return;
    const int64_t deficit = want - s.credit;
    if (deficit <= 0) return;
    if (s.credit > 0 && deficit < std::max<int64_t>(1, want / 2)) return;
    batch = deficit;
    seq = next_seq_++;
    const auto now = SteadyClock::now();
    s.credit += batch;
    s.requests[seq] = {batch, now + timing_.expires};
    if (s.requests.size() == 1) s.last_heard = now;  // the heartbeat clock starts now
    subject = s.next_subject;
    reply = inbox_prefix_ + "." + std::to_string(slot) + "." + std::to_string(seq);
  }
  using std::chrono::nanoseconds;
  const std::string body =
      "{\"batch\":" + std::to_string(batch) +
      ",\"expires\":" + std::to_string(nanoseconds(timing_.expires).count()) +
      ",\"idle_heartbeat\":" + std::to_string(nanoseconds(timing_.idle_heartbeat).count()) + "}";
  natsStatus st = natsConnection_PublishRequest(nc_, subject.c_str(), reply.c_str(), body.data(),
                                                static_cast<int>(body.size()));
  if (st != NATS_OK) {
    // Not sent (disconnected): forget it so the next Refill asks again.
    spdlog::debug("pull: request not sent: {}", natsStatus_GetText(st));
    std::lock_guard lock(mu_);
    Slot& s = slots_[slot];
    s.credit = std::max<int64_t>(0, s.credit - batch);
    s.requests.erase(seq);
  }
}

void PullSubscriber::Tick() {
  const auto now = SteadyClock::now();
  const auto grace = std::chrono::milliseconds(500);
  std::lock_guard lock(mu_);
  for (Slot& s : slots_) {
    if (s.requests.empty()) continue;
    if (now - s.last_heard > 3 * timing_.idle_heartbeat + grace) {
      // No heartbeat and no message: the server no longer holds our requests.
      spdlog::warn("pull: no heartbeat on {} for {} ms; asking again", s.consumer,
                   std::chrono::duration_cast<std::chrono::milliseconds>(now - s.last_heard).count());
      s.requests.clear();
      s.credit = 0;
      continue;
    }
    int64_t live = 0;
    for (auto it = s.requests.begin(); it != s.requests.end();) {
      if (now > it->second.expires_at + grace) {
        it = s.requests.erase(it);  // served in full, or its 408 was lost
      } else {
        live += it->second.batch;
        ++it;
      }
    }
    s.credit = std::min(s.credit, live);
  }
}

int64_t PullSubscriber::TotalCredit() const {
  std::lock_guard lock(mu_);
  int64_t total = 0;
  for (const Slot& s : slots_) total += s.credit;
  return total;
}

void PullSubscriber::HandleMessage(MsgPtr msg) {
  if (natsMsg_GetDataLength(msg.get()) == 0) {
    const std::string_view status = Header(msg.get(), "Status");
    if (!status.empty()) return HandleStatus(msg.get(), status);
  }
  const char* reply = natsMsg_GetReply(msg.get());
  Delivery d;
  if (!reply || !ParseAckSubject(reply, &d)) {
    spdlog::warn("pull: message on {} without a known ack subject; dropped",
                 natsMsg_GetSubject(msg.get()));
    return;
  }
  {
    std::lock_guard lock(mu_);
    Slot& s = slots_[d.slot];
    s.credit = std::max<int64_t>(0, s.credit - 1);
    s.last_heard = SteadyClock::now();
  }
  on_message_(d, std::move(msg));
}

void PullSubscriber::HandleStatus(natsMsg* msg, std::string_view status) {
  // The status came back on <inbox>.<slot>.<seq>.
  std::string_view subject = natsMsg_GetSubject(msg);
  if (subject.size() <= inbox_prefix_.size() + 1) return;
  subject.remove_prefix(inbox_prefix_.size() + 1);
  std::string_view parts[2];
  if (SplitTokens(subject, parts, 2) != 2) return;
  uint64_t slot = 0, seq = 0;
  if (!wire::ParseU64(parts[0], &slot) || !wire::ParseU64(parts[1], &seq)) return;

  std::lock_guard lock(mu_);
  if (slot >= slots_.size()) return;
  Slot& s = slots_[slot];
  s.last_heard = SteadyClock::now();
  if (status == "100") return;  // idle heartbeat
  auto it = s.requests.find(seq);
  uint64_t pending = 0;
  if (!wire::ParseU64(Header(msg, "Nats-Pending-Messages"), &pending)) {
    pending = it != s.requests.end() ? it->second.batch : 0;
  }
  if (status != "408" && status != "404") {
    spdlog::debug("pull: {} on {}: {}", status, s.consumer, Header(msg, "Description"));
  }
  if (it != s.requests.end()) s.requests.erase(it);
  s.credit = std::max<int64_t>(0, s.credit - static_cast<int64_t>(pending));
}

bool PullSubscriber::ParseAckSubject(std::string_view ack, Delivery* d) const {
  // v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
  // v2: $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>.<random>
  std::string_view t[12];
  const size_t n = SplitTokens(ack, t, 12);
  if (n < 9 || t[0] != "$JS" || t[1] != "ACK") return false;
  const size_t consumer_at = n == 9 ? 3 : 5;
  if (!wire::ParseU64(t[consumer_at + 1], &d->delivered)) d->delivered = 1;
  uint64_t ts = 0;
  if (wire::ParseU64(t[consumer_at + 4], &ts)) d->stored_unix_ns = static_cast<int64_t>(ts);
  std::lock_guard lock(mu_);
  auto it = by_name_.find(t[consumer_at]);
  if (it == by_name_.end()) return false;
  d->slot = it->second;
  return true;
}

}  // namespace shoal::queue
