// Priority classes on the shared queue. Each model has one work subject and
// one durable consumer per class, so a worker can ask for interactive work
// first and take batch work only with capacity interactive traffic leaves
// idle (worker/pull_planner.h), and a flood of batch work fills its own
// per-subject bound, never the interactive one.
//
//   interactive  shoal.work.<pool>.<model-token>         consumer <model-token>
//   batch        shoal.work.<pool>.<model-token>.batch   consumer <model-token>_batch
//
// (`_batch` cannot be part of a model token, whose escapes are '_' and two
// upper-case hex digits.) A request picks its class with the
// X-Shoal-Priority header, or its API key's default; the Batch API's jobs
// run as batch.
#pragma once

#include <optional>
#include <string_view>

namespace shoal::queue {

enum class Priority { kInteractive, kBatch };
inline constexpr int kPriorities = 2;

inline std::string_view PriorityName(Priority p) { return p == Priority::kBatch ? "batch" : "interactive"; }

inline std::optional<Priority> ParsePriority(std::string_view name) {
  if (name == "interactive") return Priority::kInteractive;
  if (name == "batch") return Priority::kBatch;
  return std::nullopt;
}

}  // namespace shoal::queue
