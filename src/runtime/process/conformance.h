// The runtime protocol's conformance suite (`shoal runtime-check`): checks
// that a runtime process answers as docs/runtime-protocol.md says — the
// handshake, refusals, health and memory reports, loads with progress,
// batches with per-item status, pipelining, unload and stop. Every runtime
// Shoal runs out of process passes it (tests/runtime_process).
//
// It speaks raw frames rather than through RuntimeClient, so it can send
// what a client never would (a request before hello, an unknown version)
// and see exactly what comes back.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/model_config.h"

namespace shoal::runtime_process {

// The runtime under test: a Unix socket it listens on, or a command Shoal
// starts with its end of a socket pair as descriptor 3 (SHOAL_RUNTIME_FD=3),
// as the worker does. A command is started once per check that needs a
// fresh connection.
struct ConformanceTarget {
  std::string socket{};
  std::vector<std::string> command{};
};

struct ConformanceOptions {
  // The model the load and batch checks use (its task says which batches);
  // without one they are skipped.
  std::optional<ModelConfig> model;
  std::chrono::milliseconds timeout{30000};  // per reply
};

struct CheckResult {
  std::string name;
  Status status;       // ok: passed
  std::string detail;  // what was seen
  bool skipped = false;
};

// Runs every check in order; `report` is called as each ends.
std::vector<CheckResult> RunConformance(const ConformanceTarget& target, const ConformanceOptions& options,
                                        const std::function<void(const CheckResult&)>& report);

}  // namespace shoal::runtime_process
