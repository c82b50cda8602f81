// A model this worker pulls for: its spec, the loaded Model, its pull slot,
// and live counters that size its pull credit.
#pragma once

#include <atomic>
#include <memory>

#include "common/model_spec.h"
#include "runtime/runtime.h"

namespace shoal::worker {

struct ServedModel {
  std::shared_ptr<const ModelSpec> spec;
  std::unique_ptr<Model> model;  // Encode may run on several executors at once
  int slot = -1;                 // PullSubscriber slot
  std::atomic<int64_t> queued{0};     // items in the local queue
  std::atomic<int64_t> in_flight{0};  // items in running batches
  std::atomic<bool> retired{false};   // left the catalog: pull no more
};

}  // namespace shoal::worker
