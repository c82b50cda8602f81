// A NATS connection driven by an EventLoop instead of cnats' own threads
// (cnats' "external event loop" mode): the loop thread reads the socket and
// hands messages to synchronous subscriptions, and writes what was published,
// so publishes made in one turn of the loop leave in one write and nothing
// crosses threads on the way in.
//
// After each read the loop calls `on_readable`, where the owner drains its
// subscriptions with natsSubscription_NextMsg (which does not block: the
// messages are already there). Publishing from another thread is allowed —
// cnats then asks the loop to write, one hop — but the hot path publishes
// from the loop.
//
// cnats calls the adapter's callbacks with its connection lock held and from
// any thread (publishers, its reconnect thread), so they only record what is
// wanted and post the work to the loop.
#pragma once

#include <functional>

#include "common/event_loop.h"
#include "queue/message.h"
#include "queue/nats.h"

namespace shoal::queue {

Result<ConnectionPtr> ConnectOnLoop(const ConnectOptions& options, EventLoop* loop,
                                    std::function<void()> on_readable);

// Moves every message now queued on `sub` to `fn`, without blocking. A
// "no responders" status (a request or JetStream publish that nobody took)
// is consumed by cnats itself, which reports it instead of a message: the
// messages behind it are still drained, not left for the next read.
template <class Fn>
void DrainSubscription(natsSubscription* sub, Fn&& fn) {
  int pending = 0;
  if (natsSubscription_GetPending(sub, &pending, nullptr) != NATS_OK) return;
  for (; pending > 0; --pending) {
    natsMsg* msg = nullptr;
    const natsStatus s = natsSubscription_NextMsg(&msg, sub, 1);
    if (s == NATS_NO_RESPONDERS) continue;
    if (s != NATS_OK) return;
    fn(Message(MsgPtr(msg)));
  }
}

}  // namespace shoal::queue
