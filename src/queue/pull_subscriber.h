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
// Credit per consumer = messages asked for and neither delivered nor expired.
// The owner calls Refill(slot, want) whenever its free capacity changes; a
// request goes out when the deficit is worth one (half of `want`, or anything
// when no credit is left). Tick(), called a few times a second, forgets
// requests past their expiry and drops credit the server no longer holds —
// after a missed heartbeat, e.g. when nats-server restarted.
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
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/event_loop.h"
#include "common/status.h"
#include "queue/nats.h"

namespace shoal::queue {

struct PullTiming {
  std::chrono::milliseconds expires{2000};
  std::chrono::milliseconds idle_heartbeat{500};
};

class PullSubscriber {
 public:
  // What the ack subject tells about a delivered message.
  struct Delivery {
    int slot = -1;              // the consumer it was pulled for
    uint64_t delivered = 1;     // JetStream's delivery count (1 the first time)
    int64_t stored_unix_ns = 0; // when the stream stored it
  };
  using OnMessage = std::function<void(const Delivery& d, MsgPtr msg)>;

  PullSubscriber(std::string inbox_prefix, OnMessage on_message, PullTiming timing = {});
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

  void Refill(int slot, int64_t want);
  void Tick();

  int64_t TotalCredit() const;

 private:
  struct Request {
    int64_t batch;
    SteadyClock::time_point expires_at;
  };
  struct Slot {
    std::string stream;
    std::string consumer;
    std::string next_subject;  // $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>
    bool enabled = true;
    int64_t credit = 0;
    std::map<uint64_t, Request> requests;  // by seq
    SteadyClock::time_point last_heard{};
  };

  void HandleMessage(MsgPtr msg);
  void HandleStatus(natsMsg* msg, std::string_view status);
  bool ParseAckSubject(std::string_view ack, Delivery* d) const;

  natsConnection* nc_ = nullptr;
  const std::string inbox_prefix_;
  const OnMessage on_message_;
  const PullTiming timing_;
  SubscriptionPtr sub_;  // touched on the loop thread only

  mutable std::mutex mu_;
  std::vector<Slot> slots_;                          // guarded by mu_
  std::map<std::string, int, std::less<>> by_name_;  // consumer → slot; guarded by mu_
  uint64_t next_seq_ = 1;                            // guarded by mu_
  bool refilling_ = false;                           // guarded by mu_; true once started
};

}  // namespace shoal::queue
