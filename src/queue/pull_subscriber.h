// PullSubscriber: keeps JetStream pull requests outstanding on several
// consumers over one inbox subscription, sized by the credit its owner grants.
// A long-poll client, not a fetch loop: an idle worker holds a request open
// and the server pushes a message into it the moment one is published.
//
// Protocol (nats-server 2.9):
//  - A pull request is a publish to $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>
//    with body {"batch":n,"expires":ns,"idle_heartbeat":ns} and reply subject
//    <inbox>.<slot>.<seq>.
//  - Messages arrive on the inbox subscription (matched by sid) carrying their
//    stream subject, with the ack subject as reply:
//    $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>.
//  - Status messages arrive on <inbox>.<slot>.<seq> with a Status header and
//    no payload: 100 idle heartbeat; 408 the request expired, with
//    Nats-Pending-Messages = how many of its batch were not delivered; 409 the
//    request was rejected or ended early. A fully served request ends silently.
//
// Credit per consumer = messages asked for and neither delivered nor expired,
// kept per request. Deliveries do not say which request they fill; the
// server serves waiting requests oldest first, so each is counted against
// the oldest request still open (a status ends a request exactly, and
// forget_at bounds any miscount).
// The owner (worker/pull_planner.h decides) calls Refill(slot, want, expires)
// whenever its free capacity changes; a request goes out when the deficit is
// worth one (half of `want`, or anything when no credit is left). Requests
// cannot be withdrawn, so an owner that may soon be busy asks with a short
// expiry. Tick(), called a few times a second, forgets requests past their
// expiry and drops credit the server no longer holds — after a missed
// heartbeat, e.g. when nats-server restarted.
//
// Backlog: every delivery's ack subject says how many messages the consumer
// still had pending after it; a request that ends unfilled says none were
// left; Probe(slot) asks the server ($JS.API.CONSUMER.INFO, num_pending).
// Peek(slot) gives the latest of those and when it was learned: what the
// stream holds for that model beyond what any worker has taken — and when
// any worker last took from it (the probe's delivered.last_active, or a
// delivery here), which bounds how long its oldest waiting message can have
// waited — and how fast its messages arrive: every delivery (cseq, pending)
// and probe (delivered.consumer_seq, num_pending) reads the consumer's
// arrivals so far (delivered + pending), and their rate over ≥ 200 ms
// windows is averaged. Backlog / rate is how long a deep backlog has been
// building, which is how old its oldest message is.
//
// Threading: the inbox is a synchronous subscription on a connection driven
// by an EventLoop (loop_connection.h); Drain runs on that loop after each
// read and calls OnMessage there. Refill and Tick run on any thread. All
// state is guarded by `mu_`; publishes happen outside it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/event_loop.h"
#include "common/gate.h"
#include "common/status.h"
#include "queue/message.h"
#include "queue/nats.h"

namespace shoal::queue {

struct PullTiming {
  std::chrono::milliseconds expires{2000};
  std::chrono::milliseconds idle_heartbeat{500};
  // How long the stream may deliver none of a model's work before the
  // worker counts as starved of it and runs the gateways' copies for idle
  // hands (worker/intake.h); a pull gets what the stream holds at once.
  std::chrono::milliseconds starved_after{250};
};

class PullSubscriber {
 public:
  // What the ack subject tells about a delivered message.
  struct Delivery {
    int slot = -1;              // the consumer it was pulled for
    uint64_t delivered = 1;     // JetStream's delivery count (1 the first time)
    int64_t stored_unix_ns = 0; // when the stream stored it
    uint64_t pending = 0;       // messages the consumer still had after this one
    uint64_t consumer_seq = 0;  // the consumer's deliveries so far, this one included
  };
  using OnMessage = std::function<void(const Delivery& d, Message msg)>;
  // A request ended (served in full, expired, or refused) or a probe was
  // answered; on the loop thread.
  using OnRequestEnd = std::function<void(int slot)>;

  PullSubscriber(std::string inbox_prefix, OnMessage on_message, PullTiming timing = {},
                 OnRequestEnd on_request_end = nullptr);
  ~PullSubscriber();

  // Subscribes the inbox on `nc`, a connection driven by `loop` (from any
  // thread; the subscription is made on the loop).
  Status Start(natsConnection* nc, EventLoop* loop);
  // Hands every message already received to OnMessage (on the loop thread).
  void Drain();
  // Stops refilling and unsubscribes (on the loop thread, after a last
  // Drain); messages still on their way are redelivered after AckWait.
  void Stop();

  // Registers a consumer and returns its slot (credit starts at zero).
  int AddConsumer(std::string stream, std::string consumer);
  // No more pulls for this slot; outstanding requests run out on their own.
  void DisableConsumer(int slot);
  // Stops all refills (drain).
  void StopRefilling();

  // Tops the slot's credit up to `want` with one request that lasts
  // `expires` (timing.expires when zero). True when a request went out.
  bool Refill(int slot, int64_t want, std::chrono::milliseconds expires = {});
  void Tick();

  // Asks the server for the consumer's backlog (one probe at a time).
  void Probe(int slot);

  struct SlotView {
    int64_t credit = 0;
    int64_t backlog = 0;
    SteadyClock::time_point backlog_at{};  // when `backlog` was learned
    SteadyClock::time_point empty_at{};    // when it was last learned to be 0
    SteadyClock::time_point taken_at{};    // when any worker last took from it
    double arrivals_per_s = 0;             // 0: not measured yet
    bool probing = false;
  };
  SlotView Peek(int slot);

  // Blocks until no pull request is open (served, ended or forgotten), or
  // `deadline`; true when none is. For a drain, after StopRefilling.
  bool WaitRequestsEnded(SteadyClock::time_point deadline);
  // When the next open request will be forgotten (time_point::max: none).
  SteadyClock::time_point EarliestForgetAt() const;
  // Pull requests and probes sent so far.
  uint64_t requests_sent() const;

 private:
  struct Request {
    int64_t remaining;  // asked for and not yet delivered
    // When its credit stops counting: its expiry plus a grace for the 408
    // on its way — 1 ms for a request without heartbeats, 500 ms for a long
    // poll. Not every end is seen in time (a 408 can come late, a delivery
    // may be counted against the wrong request), and credit that outlives
    // its request stalls the worker; forgetting a request the server still
    // holds merely asks for a little more.
    SteadyClock::time_point forget_at;
    Gate::Holder open;  // in `open_` while the request is
  };
  struct Slot {
    std::string stream;
    std::string consumer;
    std::string next_subject;  // $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>
    bool enabled = true;
    int64_t credit = 0;
    int64_t backlog = 0;  // see the header
    SteadyClock::time_point backlog_at{};
    SteadyClock::time_point empty_at{};
    SteadyClock::time_point taken_at{};
    bool probing = false;
    SteadyClock::time_point probed_at{};
    // The arrival-rate window (see the header).
    uint64_t window_arrivals = 0;
    SteadyClock::time_point window_start{};
    double arrivals_per_s = 0;
    std::string info_subject;  // $JS.API.CONSUMER.INFO.<stream>.<consumer>
    std::map<uint64_t, Request> requests;  // by seq
    SteadyClock::time_point last_heard{};
  };

  void HandleMessage(Message msg);
  void HandleStatus(const Message& msg, std::string_view status);
  // Forgets requests past forget_at, and their credit.
  static void ExpireLocked(Slot& s, SteadyClock::time_point now);
  void HandleProbeReply(int slot, const Message& msg);
  static void CountArrivals(Slot& s, uint64_t arrivals, SteadyClock::time_point now);
  bool ParseAckSubject(std::string_view ack, Delivery* d) const;

  natsConnection* nc_ = nullptr;
  const std::string inbox_prefix_;
  const OnMessage on_message_;
  const PullTiming timing_;
  const OnRequestEnd on_request_end_;
  SubscriptionPtr sub_;  // touched on the loop thread only

  Gate open_;  // the open requests (a drain waits on it); outlives slots_
  mutable std::mutex mu_;
  std::vector<Slot> slots_;                          // guarded by mu_
  std::map<std::string, int, std::less<>> by_name_;  // consumer → slot; guarded by mu_
  uint64_t next_seq_ = 1;                            // guarded by mu_
  uint64_t requests_sent_ = 0;                       // guarded by mu_
  bool refilling_ = false;                           // guarded by mu_; true once started
};

}  // namespace shoal::queue
