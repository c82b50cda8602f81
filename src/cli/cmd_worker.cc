// shoal worker --nats URL: pulls and runs work for the models of its pool.
#include "cli/commands.h"
#include "common/log.h"
#include "worker/worker.h"

namespace shoal::cli {

Subcommand AddWorker(CLI::App& app) {
  auto* sub = app.add_subcommand("worker", "Run a worker: pull, batch and run work for a pool's models");
  auto opts = std::make_shared<worker::WorkerOptions>();
  opts->nats_url = "nats://127.0.0.1:4222";
  sub->add_option("--nats", opts->nats_url, "NATS URL")->capture_default_str();
  sub->add_option("--pool", opts->pool, "the pool whose models it serves")->capture_default_str();
  sub->add_option("--model", opts->models, "serve only this model (repeatable)");
  sub->add_option("--executors", opts->executors, "batches run at once (devices)")->capture_default_str();
  sub->add_option("--threads", opts->threads_per_executor,
                  "cores each executor's batch may use (0: the machine's cores / executors)")
      ->capture_default_str();
  sub->add_option("--id", opts->id, "worker id (default: host-pid-random)");
  return {sub, [opts] {
            BlockStopSignals();
            auto w = worker::Worker::Start(*opts);
            if (!w.ok()) {
              spdlog::error("worker: {}", w.status().ToString());
              return 1;
            }
            WaitForStopSignal();
            spdlog::info("stopping: finishing queued work");
            (*w)->Drain(std::chrono::seconds(10));
            return 0;
          }};
}

}  // namespace shoal::cli
