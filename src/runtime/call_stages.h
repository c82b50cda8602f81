// CallStages: where a model call's time went, for the worker's stage
// metrics (worker/worker_metrics.h).
//
// The worker zeroes the calling thread's record before it calls a Model and
// reads it after; a runtime that tokenizes adds its tokenizing time with a
// StageTimer. It is per thread, not a field of every call's signature,
// because it is a measurement, not a result: a runtime that reports nothing
// leaves the whole call counted as inference, and out-of-process runtimes
// need no protocol change.
#pragma once

#include <cstdint>

#include "common/clock.h"

namespace shoal {

struct CallStages {
  int64_t tokenize_us = 0;
};

// The calling thread's record.
inline CallStages& ThisCallStages() {
  thread_local CallStages stages;
  return stages;
}

// Adds the time from its construction to its destruction to `*field`.
class StageTimer {
 public:
  explicit StageTimer(int64_t* field) : field_(field), start_(SteadyClock::now()) {}
  ~StageTimer() { *field_ += MicrosSince(start_); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  int64_t* field_;
  SteadyClock::time_point start_;
};

}  // namespace shoal
