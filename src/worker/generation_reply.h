// A generation's chunks on their way to the client: the reply header (seq,
// final, attempt, cold start) and, on the final chunk, the model's
// generation metrics — one place for both of the worker's generation paths
// (generation_engine.h, stream_relay.h).
#pragma once

#include <cstdint>
#include <string>

#include "queue/nats.h"
#include "wire/generate.h"
#include "worker/served_model.h"
#include "worker/work_item.h"

namespace shoal::worker {

// Publishes `chunk` as chunk `seq` of `item`'s reply; a final chunk carries
// usage and timing (filled in by the caller) and is recorded in the model's
// metrics. `scratch` is reused between calls. A failed publish is logged: the
// client's gateway times out and the request is retried.
void PublishChunk(natsConnection* nc, const std::string& worker_id, const ServedModel& model, const WorkItem& item,
                  uint32_t seq, bool final, const wire::GenerationChunk& chunk, std::string* scratch);

}  // namespace shoal::worker
