// One work message as the worker handles it: the message (which owns the
// bytes) and the fields read from its headers once, on arrival.
//
// Most items are pulled from JetStream and settled on their ack subject.
// Items pushed by the push baseline (gateway/push_dispatcher.h) came over core
// NATS: they have no ack subject, nothing redelivers them, and BatchRunner
// skips acks (and answers instead of naking, see batch_runner.h) for them.
// Hedged items (gateway/queue_dispatcher.h) came over core NATS too, but are
// second copies of items the work stream holds: what this worker cannot
// finish it drops without a word, and the stream's copy runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"
#include "queue/message.h"
#include "queue/priority.h"
#include "queue/pull_subscriber.h"
#include "wire/work_message.h"
#include "worker/item_ticket.h"
#include "worker/served_model.h"

namespace shoal::worker {

// How the item reached this worker.
enum class ItemSource {
  kPulled,  // JetStream delivery: `ack` is its ack subject
  kPushed,  // core NATS push from a gateway: no ack subject, no redelivery
  kHedged,  // core NATS copy of an item the stream holds too (gateway hedging)
};

struct WorkItem {
  queue::Message msg;  // owns the bytes `work` and `payload` view
  ItemSource source = ItemSource::kPulled;
  std::shared_ptr<ServedModel> model;
  // Its place in the worker's accounting, once accepted (after `model`: it
  // goes first).
  ItemTicket ticket;

  wire::WorkHeader work;  // the message's header (wire/work_message.h)
  queue::Priority priority = queue::Priority::kInteractive;  // its consumer's class
  // The item's body: a view into `msg` — or into `fetched` once an
  // offloaded item's bytes came back from the payload store.
  std::string_view payload;
  std::unique_ptr<std::string> fetched;
  std::string_view ack;    // the JetStream ack subject; empty when pushed

  int64_t enqueued_us = 0;  // Unix µs, when JetStream stored it
  uint64_t delivered = 1;   // JetStream delivery count

  SteadyClock::time_point received;       // into the local queue
  SteadyClock::time_point last_progress;  // last +WPI (or arrival)

  // Whether JetStream expects an ack (and +WPI) for this item.
  bool HasAck() const { return source == ItemSource::kPulled; }
  // Whether the work stream holds it (pulled, or a hedged copy): what this
  // worker cannot finish, the stream hands to someone.
  bool InStream() const { return source != ItemSource::kPushed; }
};

// Reads a delivered work message's header. Fails (and the caller
// terminates the message) when it is unreadable or names nobody to answer;
// `out->ack` is set even then.
Status ParseWorkItem(queue::Message msg, std::shared_ptr<ServedModel> model,
                     const queue::PullSubscriber::Delivery& delivery, WorkItem* out);

// Reads a work message that came over core NATS, pushed or hedged (the
// same message, no ack subject; `model` may be null when this worker does
// not serve it). Its queue time counts from its arrival here: no stream
// stamped it.
Status ParsePushedItem(queue::Message msg, std::shared_ptr<ServedModel> model, WorkItem* out,
                       ItemSource source = ItemSource::kPushed);

}  // namespace shoal::worker
