// The conformance suite's generation checks: 8 greedy tokens, greedy
// decoding repeated, a cancelled generation, and, when the hello lists
// json_schema, output held to a schema (docs/runtime-protocol.md
// "Conformance").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/process/conformance_peer.h"

namespace shoal::runtime_process::conformance {

// On a loaded model `handle` of `p`'s runtime; request ids from `id` on.
// `hello`: what the runtime said of itself (the formats it lists; whether
// it counts tokens — if not, the counts are the usage it reports, and its
// chunks may carry text alone).
void CheckGeneration(Peer& p, const std::string& handle, const RuntimeHello& hello, std::chrono::milliseconds timeout,
                     uint64_t& id, const std::function<void(CheckResult)>& add);

}  // namespace shoal::runtime_process::conformance
