// The benchmark baselines as a gateway's dispatchers (gateway/dispatcher.h):
// what `shoal gateway --in-process` and `--dispatch push-rr|push-lo` select.
// Only the command line and the benchmarks link them; a gateway on its own
// knows nothing of them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "baselines/push_dispatcher.h"
#include "gateway/gateway.h"

namespace shoal::baselines {

// How a gateway's workers get work (`shoal gateway --dispatch`).
enum class DispatchMode {
  kPull,                  // "pull": the JetStream queue (the product)
  kPushRoundRobin,        // "push-rr": PushDispatcher, round-robin
  kPushLeastOutstanding,  // "push-lo": PushDispatcher, least outstanding items
};
std::optional<DispatchMode> ParseDispatchMode(std::string_view name);

// Makes `options` push each request to one worker, as a router does (its
// workers take pushes through a PushIntake). kPull leaves them as they are.
void UseDispatch(DispatchMode mode, gateway::GatewayOptions* options);

// Makes `options` run the profiles of `models_dir` in the gateway process:
// a fixed catalog, no NATS, no workers (InProcessDispatcher).
Status UseInProcess(const std::string& models_dir, gateway::GatewayOptions* options);

}  // namespace shoal::baselines
