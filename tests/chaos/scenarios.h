// The chaos scenarios: real `shoal worker` / `shoal gateway` processes and
// real nats-servers, a LoadDriver's clients checking every answer, and one
// fault injected mid-traffic. Each returns what the clients saw (load.h:
// sent, completed, failed explicitly, lost) and how long recovery took.
//
//   worker_kill        two workers; one is SIGKILLed while it provably holds
//                      unanswered items (frozen with SIGSTOP and checked with
//                      an InFlightProbe first); a replacement starts.
//   runtime_process_kill  the model runs in a runtime process (`process:
//                      shared`); it is SIGKILLed under load, and the worker
//                      puts its batches back and starts another.
//   sidecar_kill       the same with a real engine: an ONNX model in the
//                      onnx sidecar (Node, ONNX Runtime), every answer checked
//                      against the native runtime on the same weights.
//   llamacpp_kill      mid-stream: a GGUF generator in the llamacpp sidecar
//                      (llama.cpp), clients streaming greedy completions,
//                      each checked whole against the prompt's answer before
//                      the fault; the sidecar is SIGKILLed mid-stream.
//   nats_restart       the only nats-server (file storage) is SIGKILLed and
//                      started again 2 s later on the same port and data.
//   gateway_restart    clients spread over two gateways; one is stopped with
//                      SIGTERM (it drains) and started again on its port.
//   gateway_kill       the same with SIGKILL: requests in flight on its
//                      connections fail for their clients (reset: explicit).
//   nats_cluster_kill  a 3-node JetStream cluster in network namespaces
//                      (nats_cluster.h), streams and buckets replicated ×3;
//                      the work stream's leader is SIGKILLed and brought
//                      back 5 s later. Skipped, with the reason, when network
//                      namespaces are not available (not root).
//   worker_partition   the same cluster; a worker on the host of a server
//                      that is not the work stream's leader, reaching NATS
//                      through it alone; the host's link goes down for 20 s
//                      and comes back (skipped as above).
//
// Threading: a scenario runs on the caller's thread (plus its clients').
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "chaos/load.h"

namespace shoal::chaos {

struct ScenarioOptions {
  std::string shoal_binary;  // the `shoal` executable
  std::string dir;           // scratch space: data and logs, one subdirectory per scenario
  int clients = 8;
  std::vector<std::string> gateway_args;  // more arguments for every `shoal gateway`
  double warm_s = 3;    // load before the fault
  double after_s = 5;   // load after recovery
  // Progress lines (long work shows progress); null: silent.
  std::function<void(const std::string&)> progress;
  // Set from a signal handler: stop early (the scenario cleans up).
  const std::atomic<bool>* interrupted = nullptr;
};

struct ScenarioResult {
  std::string name;
  bool skipped = false;
  std::string skip_reason;
  std::string error;        // could not run as designed: a failure, like a loss
  Tally tally;
  uint64_t left_in_stream = 0;    // work its consumers never saw acked (should be 0)
  uint64_t ghosts_in_stream = 0;  // acked by the consumer, kept by the stream (scenarios.cc)
  // Copies of items the gateway also sent straight to workers (its
  // shoal_gateway_hedged_items_total: gateway/queue_dispatcher.h); read in
  // nats_cluster_kill only.
  uint64_t hedged = 0;
  std::string dir;              // its logs
};

std::vector<std::string> ScenarioNames();
// Runs one scenario by name (error set for an unknown name).
ScenarioResult RunScenario(const std::string& name, const ScenarioOptions& options);

}  // namespace shoal::chaos
