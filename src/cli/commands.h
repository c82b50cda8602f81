// The `shoal` subcommands. Each registers its flags on a CLI11 subcommand and
// runs when chosen; main.cc only dispatches.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <iostream>

#include "gateway/gateway.h"
#include "worker/worker.h"

namespace shoal::cli {

// A registered subcommand and its body, run after parsing; the body returns
// the process exit code.
struct Subcommand {
  CLI::App* app;
  std::function<int()> run;
};

Subcommand AddUp(CLI::App& app);
Subcommand AddGateway(CLI::App& app);
Subcommand AddWorker(CLI::App& app);
Subcommand AddModels(CLI::App& app);
Subcommand AddTokenize(CLI::App& app);
Subcommand AddStatus(CLI::App& app);
Subcommand AddKeys(CLI::App& app);
Subcommand AddBench(CLI::App& app);
Subcommand AddTune(CLI::App& app);
Subcommand AddRuntimeHost(CLI::App& app);
Subcommand AddRuntimeCheck(CLI::App& app);

// Prints "error: <status>" on stderr and gives exit code 1: `return Fail(s);`.
inline int Fail(const Status& s) {
  std::cerr << "error: " << s.ToString() << "\n";
  return 1;
}

// Blocks SIGINT and SIGTERM in the calling thread (call before starting any
// thread, so all inherit it) and, later, waits for one of them.
void BlockStopSignals();
int WaitForStopSignal();

// --memory-budget, --eviction, --max-models: shared by `worker` and `up`.
void AddResidencyOptions(CLI::App* sub, worker::WorkerOptions* options);

// --auth (SHOAL_AUTH) and --max-in-flight: who may call a gateway and how
// much it takes on; shared by `gateway` and `up`. An unknown --auth is a
// usage error (the process does not start).
void AddAdmissionOptions(CLI::App* sub, gateway::GatewayOptions* options);

// --otlp-endpoint and (with `trace_sample`) --trace-sample: where spans go
// and how many requests start a trace; shared by `gateway`, `worker`, `up`.
void AddTraceOptions(CLI::App* sub, std::string* otlp_endpoint, double* trace_sample);
// --require-license: the catalog's license policy (admin/provenance.h).
void AddRequireLicenseOption(CLI::App* sub, bool* require_license);

// --nats-ca, --nats-cert, --nats-key, --nats-user, --nats-password
// (SHOAL_NATS_PASSWORD), --nats-creds: TLS and credentials for every NATS
// connection of the subcommand (nats_options.cc).
void AddNatsSecurityOptions(CLI::App* sub, queue::NatsSecurity* security);
// --replicas N: JetStream replicas of the streams and KV buckets the
// subcommand creates (queue/topology.h StreamLimits::replicas); 3 or 5 on a
// JetStream cluster. Unset: 1 for what it creates, existing ones untouched.
void AddNatsReplicasOption(CLI::App* sub, int* replicas);

// --tls-cert, --tls-key: the gateway serves HTTPS; shared by `gateway` and `up`.
// --header-timeout-s and --max-connections: how long a request's head may
// take once begun, and the connections open at once; shared by `gateway`
// and `up`.
void AddConnectionOptions(CLI::App* sub, http::ServerOptions* http);
void AddHttpsOptions(CLI::App* sub, http::ServerOptions* http);

// --payload-store (env SHOAL_PAYLOAD_STORE): where items too large for a NATS
// message wait while queued. Gateways and workers of a cluster name the same.
void AddPayloadStoreOption(CLI::App* sub, std::string* url);

// --cache-dir, --cache-bytes: the model cache models from the model store
// are fetched to (store/model_cache.h); shared by `worker` and `gateway`.
void AddModelCacheOptions(CLI::App* sub, std::string* dir, uint64_t* bytes);

// The profiles directory: the flag's value, else ./models, else the source
// tree's models/ (a binary run from build/).
std::string DefaultModelsDir();

}  // namespace shoal::cli
