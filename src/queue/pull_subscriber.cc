#include "queue/pull_subscriber.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "common/log.h"
#include "common/numbers.h"
#include "queue/loop_connection.h"

namespace shoal::queue {
namespace {

// "2026-11-30T05:08:14.546910686Z" (UTC, as nats-server writes times) → Unix ns.
bool ParseRfc3339Nanos(const std::string& s, int64_t* unix_ns) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return false;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t frac_ns = 0;
  size_t i = static_cast<size_t>(consumed);
  if (i < s.size() && s[i] == '.') {
    int64_t scale = 100000000;
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, scale /= 10) frac_ns += (s[i] - '0') * scale;
  }
  if (i >= s.size() || s[i] != 'Z') return false;  // nats-server writes UTC
  const time_t secs = timegm(&tm);
  if (secs < 0) return false;
  *unix_ns = static_cast<int64_t>(secs) * 1000000000 + frac_ns;
  return true;
}

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

PullSubscriber::PullSubscriber(std::string inbox_prefix, OnMessage on_message, PullTiming timing,
                               OnRequestEnd on_request_end)
    : inbox_prefix_(std::move(inbox_prefix)),
      on_message_(std::move(on_message)),
      timing_(timing),
      on_request_end_(std::move(on_request_end)) {}

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
  DrainSubscription(sub_.get(), [this](Message msg) { HandleMessage(std::move(msg)); });
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
  s.info_subject = "$JS.API.CONSUMER.INFO." + stream + "." + consumer;
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
  open_.Close();
}

bool PullSubscriber::Refill(int slot, int64_t want, std::chrono::milliseconds expires) {
  if (expires.count() <= 0) expires = timing_.expires;
  std::string subject, reply;
  int64_t batch = 0;
  uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    Slot& s = slots_[slot];
    if (!refilling_ || !s.enabled) return false;
    const auto now = SteadyClock::now();
    ExpireLocked(s, now);
    const int64_t deficit = want - s.credit;
    if (deficit <= 0) return false;
    if (s.credit > 0 && deficit < std::max<int64_t>(1, want / 2)) return false;
    std::optional<Gate::Holder> open = open_.TryEnter();
    if (!open) return false;  // stopped refilling
    batch = deficit;
    seq = next_seq_++;
    ++requests_sent_;
    s.credit += batch;
    const bool heartbeats = expires >= 2 * timing_.idle_heartbeat;
    s.requests.emplace(seq, Request{batch,
                                    now + expires + (heartbeats ? std::chrono::milliseconds(500)
                                                                : std::chrono::milliseconds(1)),
                                    std::move(*open)});
    if (s.requests.size() == 1) s.last_heard = now;  // the heartbeat clock starts now
    subject = s.next_subject;
    reply = inbox_prefix_ + "." + std::to_string(slot) + "." + std::to_string(seq);
  }
  using std::chrono::nanoseconds;
  std::string body = "{\"batch\":" + std::to_string(batch) +
                     ",\"expires\":" + std::to_string(nanoseconds(expires).count());
  // The server refuses a heartbeat over half the expiry; a short request
  // ends (408) soon enough to show the server still holds it.
  if (expires >= 2 * timing_.idle_heartbeat) {  // as `heartbeats` above
    body += ",\"idle_heartbeat\":" + std::to_string(nanoseconds(timing_.idle_heartbeat).count());
  }
  body += "}";
  natsStatus st = natsConnection_PublishRequest(nc_, subject.c_str(), reply.c_str(), body.data(),
                                                static_cast<int>(body.size()));
  if (st != NATS_OK) {
    // Not sent (disconnected): forget it so the next Refill asks again.
    spdlog::debug("pull: request not sent: {}", natsStatus_GetText(st));
    std::lock_guard lock(mu_);
    Slot& s = slots_[slot];
    if (auto it = s.requests.find(seq); it != s.requests.end()) {
      s.credit -= it->second.remaining;
      s.requests.erase(it);
    }
    return false;
  }
  return true;
}

void PullSubscriber::Tick() {
  const auto now = SteadyClock::now();
  const auto grace = std::chrono::milliseconds(500);
  std::lock_guard lock(mu_);
  for (Slot& s : slots_) {
    if (s.probing && now - s.probed_at > grace) s.probing = false;  // its answer was lost
    if (s.requests.empty()) continue;
    if (now - s.last_heard > 3 * timing_.idle_heartbeat + grace) {
      // No heartbeat and no message: the server no longer holds our requests.
      spdlog::warn("pull: no heartbeat on {} for {} ms; asking again", s.consumer,
                   std::chrono::duration_cast<std::chrono::milliseconds>(now - s.last_heard).count());
      s.requests.clear();
      s.credit = 0;
      continue;
    }
    ExpireLocked(s, now);
  }
}

void PullSubscriber::ExpireLocked(Slot& s, SteadyClock::time_point now) {
  for (auto it = s.requests.begin(); it != s.requests.end();) {
    if (now > it->second.forget_at) {  // no status came
      s.credit -= it->second.remaining;
      it = s.requests.erase(it);
    } else {
      ++it;
    }
  }
}

void PullSubscriber::Probe(int slot) {
  std::string subject;
  {
    std::lock_guard lock(mu_);
    Slot& s = slots_[slot];
    if (!refilling_ || !s.enabled || s.probing) return;
    s.probing = true;
    s.probed_at = SteadyClock::now();
    ++requests_sent_;
    subject = s.info_subject;
  }
  const std::string reply = inbox_prefix_ + "." + std::to_string(slot) + ".p";
  if (natsConnection_PublishRequest(nc_, subject.c_str(), reply.c_str(), nullptr, 0) != NATS_OK) {
    std::lock_guard lock(mu_);
    slots_[slot].probing = false;
  }
}

PullSubscriber::SlotView PullSubscriber::Peek(int slot) {
  std::lock_guard lock(mu_);
  Slot& s = slots_[slot];
  ExpireLocked(s, SteadyClock::now());
  return {s.credit, s.backlog, s.backlog_at, s.empty_at, s.taken_at, s.arrivals_per_s, s.probing};
}

uint64_t PullSubscriber::requests_sent() const {
  std::lock_guard lock(mu_);
  return requests_sent_;
}

SteadyClock::time_point PullSubscriber::EarliestForgetAt() const {
  std::lock_guard lock(mu_);
  auto earliest = SteadyClock::time_point::max();
  for (const Slot& s : slots_) {
    for (const auto& [seq, r] : s.requests) earliest = std::min(earliest, r.forget_at);
  }
  return earliest;
}

bool PullSubscriber::WaitRequestsEnded(SteadyClock::time_point deadline) { return open_.WaitEmpty(deadline); }

void PullSubscriber::HandleMessage(Message msg) {
  if (std::string_view subject = msg.subject(); subject.ends_with(".p")) {
    // <inbox>.<slot>.p: a probe's answer.
    subject.remove_suffix(2);
    uint64_t slot = 0;
    if (ParseU64(subject.substr(subject.rfind('.') + 1), &slot)) {
      HandleProbeReply(static_cast<int>(slot), msg);
    }
    return;
  }
  if (msg.payload().empty()) {
    const std::string_view status = msg.server_header("Status");
    if (!status.empty()) return HandleStatus(msg, status);
  }
  Delivery d;
  if (msg.reply().empty() || !ParseAckSubject(msg.reply(), &d)) {
    spdlog::warn("pull: message on {} without a known ack subject; dropped", msg.subject());
    return;
  }
  {
    std::lock_guard lock(mu_);
    Slot& s = slots_[d.slot];
    if (auto oldest = s.requests.begin(); oldest != s.requests.end()) {
      --s.credit;
      if (--oldest->second.remaining == 0) s.requests.erase(oldest);  // served in full
    }
    s.backlog = static_cast<int64_t>(d.pending);
    s.last_heard = s.backlog_at = s.taken_at = SteadyClock::now();
    if (s.backlog == 0) s.empty_at = s.backlog_at;
    if (d.consumer_seq > 0) CountArrivals(s, d.consumer_seq + d.pending, s.backlog_at);
  }
  on_message_(d, std::move(msg));
}

void PullSubscriber::HandleStatus(const Message& msg, std::string_view status) {
  // The status came back on <inbox>.<slot>.<seq>.
  std::string_view subject = msg.subject();
  if (subject.size() <= inbox_prefix_.size() + 1) return;
  subject.remove_prefix(inbox_prefix_.size() + 1);
  std::string_view parts[2];
  if (SplitTokens(subject, parts, 2) != 2) return;
  uint64_t slot = 0, seq = 0;
  if (!ParseU64(parts[0], &slot) || !ParseU64(parts[1], &seq)) return;

  {
    std::lock_guard lock(mu_);
    if (slot >= slots_.size()) return;
    Slot& s = slots_[slot];
    s.last_heard = SteadyClock::now();
    if (status == "100") return;  // idle heartbeat
    auto it = s.requests.find(seq);
    uint64_t pending = 0;
    if (!ParseU64(msg.server_header("Nats-Pending-Messages"), &pending)) {
      pending = it != s.requests.end() ? it->second.remaining : 0;
    }
    if (status != "408" && status != "404") {
      spdlog::debug("pull: {} on {}: {}", status, s.consumer, msg.server_header("Description"));
    }
    // It is over (a request already forgotten took its credit with it).
    if (it != s.requests.end()) {
      s.credit -= it->second.remaining;
      s.requests.erase(it);
    }
    // It ended unfilled: the stream had nothing more for this consumer.
    if (pending > 0) {
      s.backlog = 0;
      s.backlog_at = s.empty_at = s.last_heard;
    }
  }
  if (on_request_end_) on_request_end_(static_cast<int>(slot));
}

void PullSubscriber::HandleProbeReply(int slot, const Message& msg) {
  const auto info = nlohmann::json::parse(msg.payload(), nullptr, /*allow_exceptions=*/false);
  {
    std::lock_guard lock(mu_);
    if (static_cast<size_t>(slot) >= slots_.size()) return;
    Slot& s = slots_[slot];
    s.probing = false;
    s.backlog_at = SteadyClock::now();
    // An error (no such consumer, say) reads as no backlog.
    s.backlog = info.is_object() && info.contains("num_pending") && info["num_pending"].is_number()
                    ? info["num_pending"].get<int64_t>()
                    : 0;
    if (s.backlog == 0) s.empty_at = s.backlog_at;
    // "delivered":{"last_active":"2026-11-30T05:08:14.546910686Z"}: the
    // consumer's last delivery, to any worker.
    if (info.is_object() && info.contains("delivered") && info["delivered"].is_object() &&
        info["delivered"].contains("consumer_seq") && info["delivered"]["consumer_seq"].is_number_unsigned()) {
      CountArrivals(s, info["delivered"]["consumer_seq"].get<uint64_t>() + static_cast<uint64_t>(s.backlog),
                    s.backlog_at);
    }
    if (info.is_object() && info.contains("delivered") && info["delivered"].is_object() &&
        info["delivered"].contains("last_active") && info["delivered"]["last_active"].is_string()) {
      int64_t unix_ns = 0;
      if (ParseRfc3339Nanos(info["delivered"]["last_active"].get<std::string>(), &unix_ns)) {
        const auto ago = std::chrono::nanoseconds(std::max<int64_t>(0, UnixMicros() * 1000 - unix_ns));
        s.taken_at = std::max(s.taken_at, s.backlog_at - std::chrono::duration_cast<SteadyClock::duration>(ago));
      }
    }
  }
  if (on_request_end_) on_request_end_(slot);
}

void PullSubscriber::CountArrivals(Slot& s, uint64_t arrivals, SteadyClock::time_point now) {
  if (s.window_start == SteadyClock::time_point{} || arrivals < s.window_arrivals) {
    s.window_arrivals = arrivals;  // first reading, or the consumer was recreated
    s.window_start = now;
    return;
  }
  const double seconds = std::chrono::duration<double>(now - s.window_start).count();
  if (seconds < 0.2) return;
  const double rate = static_cast<double>(arrivals - s.window_arrivals) / seconds;
  s.arrivals_per_s = s.arrivals_per_s == 0 ? rate : 0.7 * s.arrivals_per_s + 0.3 * rate;
  s.window_arrivals = arrivals;
  s.window_start = now;
}

bool PullSubscriber::ParseAckSubject(std::string_view ack, Delivery* d) const {
  // v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
  // v2: $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>.<random>
  std::string_view t[12];
  const size_t n = SplitTokens(ack, t, 12);
  if (n < 9 || t[0] != "$JS" || t[1] != "ACK") return false;
  const size_t consumer_at = n == 9 ? 3 : 5;
  if (!ParseU64(t[consumer_at + 1], &d->delivered)) d->delivered = 1;
  uint64_t ts = 0;
  if (ParseU64(t[consumer_at + 4], &ts)) d->stored_unix_ns = static_cast<int64_t>(ts);
  if (!ParseU64(t[consumer_at + 5], &d->pending)) d->pending = 0;
  if (!ParseU64(t[consumer_at + 3], &d->consumer_seq)) d->consumer_seq = 0;
  std::lock_guard lock(mu_);
  auto it = by_name_.find(t[consumer_at]);
  if (it == by_name_.end()) return false;
  d->slot = it->second;
  return true;
}

}  // namespace shoal::queue
