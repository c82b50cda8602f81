// One work message as the worker handles it: the message (which owns the
// bytes) and the fields read from its headers once, on arrival.
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

struct WorkItem {
  queue::MsgPtr msg;
  std::shared_ptr<ServedModel> model;

  // Views into `msg`.
  std::string_view payload;
  std::string_view request_id;
  std::string_view reply;  // where the result goes
  std::string_view ack;    // the JetStream ack subject

  std::string_view task;  // Shoal-Task; empty means encode
  uint32_t index = 0;
  uint32_t cost = 1;
  int64_t deadline_ms = 0;  // Unix ms; 0 = none
  int64_t enqueued_us = 0;  // Unix µs, when JetStream stored it
  bool truncate = false;
  bool normalize = true;
  uint64_t delivered = 1;   // JetStream delivery count

  SteadyClock::time_point received;       // into the local queue
  SteadyClock::time_point last_progress;  // last +WPI (or arrival)
};

// Reads the headers of a delivered work message. Fails (and the caller
// terminates the message) when the headers a reply needs are missing.
Status ParseWorkItem(queue::MsgPtr msg, std::shared_ptr<ServedModel> model,
                     const queue::PullSubscriber::Delivery& delivery, WorkItem* out);

}  // namespace shoal::worker
