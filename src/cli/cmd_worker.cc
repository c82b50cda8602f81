// shoal worker --nats URL: pulls and runs work for the models of its pool.
#include <cctype>

#include "baselines/push_intake.h"
#include "cli/commands.h"
#include "common/log.h"
#include "worker/worker.h"

namespace shoal::cli {
namespace {

// "512M", "4G", "1.5GiB", "2000000": bytes (K/M/G/T are powers of 1024).
Result<uint64_t> ParseByteSize(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    return InvalidInput("not a size: '" + text + "' (e.g. 512M, 4G)");
  }
  std::string unit = text.substr(used);
  if (unit.ends_with("iB") || unit.ends_with("ib")) unit.resize(unit.size() - 2);
  if (unit.ends_with("B") || unit.ends_with("b")) unit.pop_back();
  static const std::string kUnits = "KMGT";
  double scale = 1;
  if (unit.size() == 1 && kUnits.find(std::toupper(unit[0])) != std::string::npos) {
    for (size_t i = 0; i <= kUnits.find(std::toupper(unit[0])); ++i) scale *= 1024;
  } else if (!unit.empty()) {
    return InvalidInput("not a size: '" + text + "' (e.g. 512M, 4G)");
  }
  if (value <= 0) return InvalidInput("a size must be positive: '" + text + "'");
  return static_cast<uint64_t>(value * scale);
}

// --name VALUE, read by `parse` (which returns a Result) into *out; what
// `parse` refuses is the option's validation error.
template <typename T, typename Parse>
void AddParsedOption(CLI::App* sub, const std::string& name, T* out, Parse parse,
                     const std::string& help) {
  sub->add_option_function<std::string>(
      name,
      [name, out, parse](const std::string& text) {
        auto value = parse(text);
        if (!value.ok()) throw CLI::ValidationError(name, value.status().message());
        *out = *value;
      },
      help);
}

}  // namespace

void AddResidencyOptions(CLI::App* sub, worker::WorkerOptions* o) {
  AddParsedOption(
      sub, "--memory-budget", &o->memory_budget, ParseByteSize,
      "memory the loaded models may take, e.g. 4G (default: half of this machine's memory)");
  AddParsedOption(sub, "--eviction", &o->eviction, worker::ParseEvictionPolicyKind,
                  "what goes first under memory pressure: cost-aware (default), lru, count");
  sub->add_option("--max-models", o->max_models,
                  "with --eviction count: the most models loaded at once");
  AddModelCacheOptions(sub, &o->cache_dir, &o->cache_bytes);
  AddParsedOption(sub, "--cache-verify", &o->cache_verify, store::ParseCacheVerify,
                  "when a cached model's files are hashed again before it loads: changed (default: "
                  "when a file's "
                  "size, inode, mtime or ctime moved) or always");
}

void AddModelCacheOptions(CLI::App* sub, std::string* dir, uint64_t* bytes) {
  sub->add_option(
      "--cache-dir", *dir,
      "where models from the model store are fetched to (default: ~/.cache/shoal/models)");
  AddParsedOption(sub, "--cache-bytes", bytes, ParseByteSize,
                  "disk the model cache may take, e.g. 50G (default: 20G); least recently used "
                  "models go first");
}

Subcommand AddWorker(CLI::App& app) {
  auto* sub =
      app.add_subcommand("worker", "Run a worker: pull, batch and run work for a pool's models");
  auto opts = std::make_shared<worker::WorkerOptions>();
  opts->nats_url = "nats://127.0.0.1:4222";
  sub->add_option("--nats", opts->nats_url, "NATS URL (tls://... for TLS)")->capture_default_str();
  AddNatsSecurityOptions(sub, &opts->nats_security);
  AddNatsReplicasOption(sub, &opts->stream_limits.replicas);
  sub->add_option("--pool", opts->pool, "the pool whose models it serves")->capture_default_str();
  sub->add_option("--model", opts->models, "serve only this model (repeatable)");
  sub->add_option("--executors", opts->executors, "batches run at once (devices)")
      ->capture_default_str();
  sub->add_option("--threads", opts->threads_per_executor,
                  "cores each executor's batch may use (0: the machine's cores / executors)")
      ->capture_default_str();
  sub->add_option("--id", opts->id, "worker id (default: host-pid-random)");
  sub->add_option("--metrics-port", opts->metrics_port,
                  "serve GET /metrics (Prometheus) on this port (0: any free port; -1: off)")
      ->capture_default_str();
  sub->add_option("--metrics-host", opts->metrics_host, "address for --metrics-port")
      ->capture_default_str();
  AddResidencyOptions(sub, opts.get());
  AddPayloadStoreOption(sub, &opts->payload_store);
  AddTraceOptions(sub, &opts->otlp_endpoint, nullptr);
  auto accept_push = std::make_shared<bool>(false);
  sub->add_flag("--accept-push", *accept_push,
                "benchmark baseline: also take items a pushing gateway (--dispatch "
                "push-rr|push-lo) sends here");
  return {sub, [opts, accept_push] {
            BlockStopSignals();
            auto w = worker::Worker::Start(*opts);
            if (!w.ok()) {
              spdlog::error("worker: {}", w.status().ToString());
              return 1;
            }
            std::unique_ptr<baselines::PushIntake> push;
            if (*accept_push) {
              auto attached = baselines::PushIntake::Attach(w->get());
              if (!attached.ok()) {
                spdlog::error("worker: {}", attached.status().ToString());
                return 1;
              }
              push = std::move(attached).value();
            }
            WaitForStopSignal();
            spdlog::info("stopping: finishing queued work");
            (*w)->Drain(std::chrono::seconds(10));
            return 0;
          }};
}

}  // namespace shoal::cli
