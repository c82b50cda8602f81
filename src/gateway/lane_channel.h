// LaneChannel: a gateway lane's NATS data path, shared by the dispatchers that
// send work over NATS — QueueDispatcher (JetStream, the product) and the push
// baseline. Transport only: it owns the lane's connection, driven by the
// lane's loop (loop_connection.h), and its reply inbox _INBOX.<lane-id>.>,
// and speaks the messages of wire/work_message.h; what a reply means to a
// request is results.h's.
//
//   PublishItems ──▶ one work message per item to a subject
//                    (its reply subject: the request's inbox)
//   _INBOX.<lane-id>.<seq>      ──▶ OnReply(request, header, body, message)
//                    for a request still pending (a result, a chunk, an error)
//   _INBOX.<lane-id>.<seq>.ack.<item>  ──▶ OnAck (JetStream's publish
//                    acknowledgements; only the pull path asks for them)
//
// Threading: everything but Start and MaxPayload runs on the lane's loop
// thread; Start makes the subscription there.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "gateway/pending.h"
#include "queue/message.h"
#include "queue/nats.h"
#include "wire/work_message.h"

namespace shoal::gateway {

class LaneChannel {
 public:
  // A publish acknowledgement (<reply>.ack.<item>) for a request still pending.
  using OnAck = std::function<void(PendingRequest& p, size_t item, const queue::Message& msg)>;
  // A reply to a request still pending; `body` views `msg`'s bytes.
  using OnReply = std::function<void(PendingRequest& p, const wire::ReplyHeader& h, std::string_view body,
                                     queue::Message msg)>;

  LaneChannel(EventLoop* loop, std::string lane_id, PendingTable* table);
  ~LaneChannel();

  // Connects (from any thread) to `nats` (its url and security; the name is
  // set here) and subscribes the lane's inbox. `on_ack` may be empty.
  Status Start(const queue::ConnectOptions& nats, OnAck on_ack, OnReply on_reply);
  // Largest message the connection's server accepts.
  int64_t MaxPayload() const;
  // Whether Start succeeded and Stop has not run.
  bool connected() const { return nc_ != nullptr; }
  const std::string& lane_id() const { return lane_id_; }

  // Publishes each item of `p` to `subject`; with `jetstream_ack`, asks for
  // JetStream's publish acknowledgement on <reply>.ack.<item>. On an error, items
  // already published may still run (their results are ignored once `p` is
  // finished by the caller).
  // `only`, when given, lists the items to publish (a republish).
  Status PublishItems(PendingRequest& p, const std::string& subject, bool jetstream_ack,
                      const std::vector<size_t>* only = nullptr);

  // How many times the connection has reconnected so far.
  uint64_t Reconnects() const;

  // Announces that `p`'s client hung up (queue/subjects.h CancelSubject).
  void PublishCancel(const PendingRequest& p);

  // No more replies after this returns.
  void Stop();

 private:
  void OnMessage(queue::Message msg);

  EventLoop* loop_;
  const std::string lane_id_;
  const std::string reply_prefix_;  // "_INBOX.<lane-id>."
  PendingTable* table_;
  OnAck on_ack_;
  OnReply on_reply_;
  queue::ConnectionPtr nc_;
  queue::SubscriptionPtr sub_;
  std::string buffer_;  // a work message being written (loop thread)
};

}  // namespace shoal::gateway
