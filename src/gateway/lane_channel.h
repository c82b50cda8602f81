// LaneChannel: a gateway lane's NATS data path, shared by the dispatchers that
// send work over NATS — QueueDispatcher (JetStream, the product) and
// PushDispatcher (core NATS to one worker, the push baseline). It owns the
// lane's connection, driven by the lane's loop (loop_connection.h), and its
// result inbox _INBOX.<lane-id>.>:
//
//   PublishItems ──▶ one message per item to a subject, with the work headers
//                    of wire/work_message.h (Shoal-Reply = the request's inbox)
//   _INBOX.<lane-id>.<seq>      ──▶ results by item index into the request's
//                    slots; an error result finishes the request; a second
//                    result for a filled slot (a redelivery) is ignored. A
//                    generation request's results are chunks in sequence
//                    (Shoal-Seq, Shoal-Final), relayed by OnGenerationResult
//                    (gateway/generation.h)
//                    A result too large for one message comes in parts
//                    (Shoal-Part/Shoal-Parts), joined before it fills its slot
//   _INBOX.<lane-id>.<seq>.ack.<item>  ──▶ handed to the owner (JetStream's
//                    publish acknowledgements; only the pull path asks for them)
//
// Threading: everything but Start and MaxPayload runs on the lane's loop
// thread; Start makes the subscription there.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "gateway/pending.h"
#include "queue/nats.h"

namespace shoal::gateway {

class LaneChannel {
 public:
  // A publish acknowledgement (<reply>.ack.<item>) for a request still pending.
  using OnAck = std::function<void(PendingRequest& p, size_t item, natsMsg* msg)>;
  // After a result was applied to a request still pending: one more slot
  // filled, or (an error result, or the last slot) the request finished. For
  // a generation request: only when it finished.
  using OnApplied = std::function<void(PendingRequest& p)>;

  LaneChannel(EventLoop* loop, std::string lane_id, PendingTable* table);
  ~LaneChannel();

  // Connects (from any thread) to `nats` (its url and security; the name is
  // set here) and subscribes the lane's inbox. Either callback may be empty.
  Status Start(const queue::ConnectOptions& nats, OnAck on_ack, OnApplied on_applied);
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

  // Announces that `p`'s client hung up (wire/subjects.h CancelSubject).
  void PublishCancel(const PendingRequest& p);

  // Frees received and published messages (call from the lane's Tick).
  void Reap() { reaper_.Reap(); }

  // No more results after this returns.
  void Stop();

 private:
  void OnReply(natsMsg* msg);
  void OnResult(PendingRequest& p, natsMsg* msg);
  void OnGenerationChunk(PendingRequest& p, natsMsg* msg);
  // Adds a part of a result sent in parts; true when it completed `r.payload`.
  static bool AddPart(ItemResult& r, natsMsg* msg);

  EventLoop* loop_;
  const std::string lane_id_;
  const std::string reply_prefix_;  // "_INBOX.<lane-id>."
  PendingTable* table_;
  OnAck on_ack_;
  OnApplied on_applied_;
  queue::ConnectionPtr nc_;
  queue::SubscriptionPtr sub_;
  queue::MsgReaper reaper_;  // reaped on Reap
};

}  // namespace shoal::gateway
