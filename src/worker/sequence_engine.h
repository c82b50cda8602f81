// SequenceEngine: where a generative model's requests go instead of the
// local queue and executors — GenerationEngine (generation_engine.h) for a
// model the worker steps itself, StreamRelay (stream_relay.h) for one whose
// runtime schedules its own sequences. The intake pushes each delivered
// item; the pull planner asks FreeSlots how many more to fetch.
//
// Threading: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "worker/ack_policy.h"
#include "worker/work_item.h"

namespace shoal::worker {

// The seed an output samples with: the request's own (`seed`), else one
// derived from its request id, so a redelivered request regenerates the
// same tokens. Output `item` > 0 of a request with n > 1 mixes its index
// in, so the outputs differ and each is still reproducible.
uint64_t SequenceSeed(std::optional<uint64_t> seed, std::string_view request_id, uint32_t item);

class SequenceEngine {
 public:
  struct Stats {
    int64_t running = 0, waiting = 0;
    int64_t kv_blocks_free = 0, kv_blocks_total = 0;  // free: unheld (cached ones included); 0 when not the worker's
    uint64_t steps = 0;  // the worker's own steps (0 when the runtime batches)
    uint64_t tokens_generated = 0;
    uint64_t preemptions = 0;
    uint64_t prefix_hit_blocks = 0;
    uint64_t drafted_tokens = 0, accepted_tokens = 0;  // speculative decoding
  };

  virtual ~SequenceEngine() = default;

  // Takes a delivered item of this engine's model.
  virtual void Push(WorkItem item) = 0;
  // Sequences it could start now (pull credit).
  virtual int64_t FreeSlots() const = 0;
  // Interactive sequences it could start now: an engine whose batch-class
  // sequences step aside for interactive ones (queue/priority.h) counts
  // their slots too.
  virtual int64_t FreeInteractiveSlots() const { return FreeSlots(); }
  // Settles what waits or runs with `outcome` (kShuttingDown: nak,
  // redelivered elsewhere; kNotServedHere on unload) and returns once
  // nothing runs; later pushes are settled the same way.
  virtual void Stop(Outcome outcome = Outcome::kShuttingDown) = 0;
  virtual Stats stats() const = 0;
};

}  // namespace shoal::worker
