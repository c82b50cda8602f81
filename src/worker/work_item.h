// One work message as the worker handles it: the message (which owns the
// bytes) and the fields read from its headers once, on arrival.
//
// Most items are pulled from JetStream and settled on their ack subject.
// Items pushed by the push baseline (gateway/push_dispatcher.h) came over core
// NATS: they have no ack subject, nothing redelivers them, and BatchRunner
// skips acks (and answers instead of naking, see batch_runner.h) for them.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"
#include "queue/nats.h"
#include "queue/pull_subscriber.h"
#include "worker/served_model.h"

namespace shoal::worker {

// How the item reached this worker.
enum class ItemSource {
  kPulled,  // JetStream delivery: `ack` is its ack subject
  kPushed,  // core NATS push from a gateway: no ack subject, no redelivery
};

struct WorkItem {
  queue::MsgPtr msg;
  ItemSource source = ItemSource::kPulled;
  std::shared_ptr<ServedModel> model;

  // Views into `msg` — but `payload` views `fetched` once an offloaded
  // item's bytes came back from the payload store.
  std::string_view payload;
  std::string_view payload_key;  // Shoal-Payload: the item waits in the payload store
  std::unique_ptr<std::string> fetched;
  std::string_view request_id;
  std::string_view reply;  // where the result goes
  std::string_view ack;    // the JetStream ack subject; empty when pushed

  std::string_view task;  // Shoal-Task; empty means encode
  std::string_view lora;  // Shoal-Lora: the adapter it runs under; empty: the base
  uint32_t index = 0;
  uint32_t cost = 1;
  int64_t deadline_ms = 0;  // Unix ms; 0 = none
  int64_t enqueued_us = 0;  // Unix µs, when JetStream stored it
  bool truncate = false;
  bool normalize = true;
  uint64_t delivered = 1;   // JetStream delivery count

  SteadyClock::time_point received;       // into the local queue
  SteadyClock::time_point last_progress;  // last +WPI (or arrival)

  // Whether JetStream expects an ack (and +WPI) for this item.
  bool HasAck() const { return source == ItemSource::kPulled; }
};

// Reads the headers of a delivered work message. Fails (and the caller
// terminates the message) when the headers a reply needs are missing.
Status ParseWorkItem(queue::MsgPtr msg, std::shared_ptr<ServedModel> model,
                     const queue::PullSubscriber::Delivery& delivery, WorkItem* out);

// Reads the headers of a pushed work message (same headers, no ack subject;
// `model` may be null when this worker does not serve it). Its queue time
// counts from its arrival here: no stream stamped it. Fails when it has no
// Shoal-Reply (nobody to answer).
Status ParsePushedItem(queue::MsgPtr msg, std::shared_ptr<ServedModel> model, WorkItem* out);

}  // namespace shoal::worker
