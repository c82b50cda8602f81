// The conformance suite's generation checks: 8 greedy tokens, greedy
// decoding repeated, and a cancelled generation (docs/runtime-protocol.md
// "Conformance").
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "runtime/process/conformance_peer.h"

namespace shoal::runtime_process::conformance {

// On a loaded model `handle` of `p`'s runtime; request ids from `id` on.
void CheckGeneration(Peer& p, const std::string& handle, std::chrono::milliseconds timeout, uint64_t& id,
                     const std::function<void(CheckResult)>& add);

}  // namespace shoal::runtime_process::conformance
