#include "worker/worker.h"

#include <unistd.h>

#include <algorithm>

#include "catalog/names.h"
#include "common/ids.h"
#include "common/log.h"

namespace shoal::worker {

Result<std::unique_ptr<Worker>> Worker::Start(WorkerOptions options) {
  if (options.id.empty()) {
    options.id = HostName() + "-" + std::to_string(getpid()) + "-" + RandomToken(4);
  }
  SHOAL_RETURN_IF_ERROR(ValidatePoolName(options.pool));
  if (options.executors < 1) return InvalidInput("executors: at least 1");
  std::unique_ptr<Worker> w(new Worker(std::move(options)));
  SHOAL_RETURN_IF_ERROR(w->Init());
  return w;
}

Status Worker::Init() {
  auto control = queue::ControlPlane::Connect(options_.nats_url, "shoal-worker-control " + options_.id,
                                              options_.nats_security, options_.stream_limits.replicas);
  if (!control.ok()) return control.status();
  control_ = std::move(control).value();
  SHOAL_RETURN_IF_ERROR(
      queue::EnsureWorkStreamExists(control_.js.get(), options_.pool, options_.stream_limits));
  auto payloads = queue::OpenPayloadStore(
      options_.payload_store.empty() ? queue::DefaultPayloadStoreUrl() : options_.payload_store);
  if (!payloads.ok()) return payloads.status();  // fail closed, as the gateway does
  payloads_ = std::move(payloads).value();
  SHOAL_ASSIGN_OR_RETURN(model_store_, store::ModelStore::Connect({.url = options_.nats_url,
                                                                    .security = options_.nats_security,
                                                                    .name = "shoal-worker-store " + options_.id},
                                                                   options_.stream_limits.replicas));
  SHOAL_ASSIGN_OR_RETURN(
      model_cache_,
      store::ModelCache::Open({.dir = options_.cache_dir.empty() ? store::DefaultModelCacheDir() : options_.cache_dir,
                               .budget_bytes = options_.cache_bytes,
                               .verify = options_.cache_verify},
                              model_store_.get()));
  model_files_ = std::make_unique<ModelFiles>(model_cache_.get());
  auto registry = queue::WorkerRegistry::Open(control_.workers.get());
  if (!registry.ok()) return registry.status();
  registry_ = std::move(registry).value();

  intake_ = std::make_unique<Intake>(
      Intake::Options{.worker_id = options_.id,
                      .pool = options_.pool,
                      .executors = options_.executors,
                      .pull = options_.pull,
                      .nats = {.url = options_.nats_url, .security = options_.nats_security}},
      Intake::Parts{.served = &served_, .queue = &queue_, .cancelled = &cancelled_, .items = &items_,
                    .reaper = &reaper_});
  SHOAL_RETURN_IF_ERROR(intake_->Connect());
  if (auto traces = trace::ExporterOptionsFromEnvironment(options_.otlp_endpoint, {"shoal-worker", options_.id});
      !traces.endpoint.empty()) {
    span_exporter_ = std::make_unique<trace::SpanExporter>(std::move(traces), metrics_.registry());
    spans_ = std::make_unique<ItemSpans>(span_exporter_.get(), options_.id);
  }
  runner_ = std::make_unique<BatchRunner>(intake_->connection(), &reaper_, options_.id, &cancelled_, payloads_.get(),
                                          spans_.get());
  SHOAL_RETURN_IF_ERROR(intake_->Start(runner_.get()));
  for (int i = 0; i < options_.executors; ++i) {
    executors_.push_back(std::make_unique<Executor>(&queue_, runner_.get(), [this] { intake_->PostPlan(); }));
  }
  RuntimeProcessSettings processes = options_.runtime_processes;
  processes.metrics = &metrics_.registry();
  runtimes_ = std::make_unique<ModelRuntimes>(std::move(processes));
  residency_ = std::make_unique<ResidentModels>(
      ResidentModels::Options{.worker_id = options_.id,
                              .pool = options_.pool,
                              .models = options_.models,
                              .memory_budget = options_.memory_budget,
                              .eviction = options_.eviction,
                              .max_models = options_.max_models,
                              .threads_per_batch = ThreadsPerBatch()},
      ResidentModels::Parts{.served = &served_,
                            .intake = intake_.get(),
                            .queue = &queue_,
                            .runner = runner_.get(),
                            .cancelled = &cancelled_,
                            .reaper = &reaper_,
                            .metrics = &metrics_,
                            .js = control_.js.get(),
                            .registry = registry_.get(),
                            .runtimes = runtimes_.get(),
                            .files = model_files_.get(),
                            .changed = [this] { Heartbeat(); }});
  auto catalog = queue::CatalogWatch::Open(control_.models.get(), [this](auto snap) { residency_->OnCatalog(snap); });
  if (!catalog.ok()) return catalog.status();
  catalog_ = std::move(catalog).value();
  residency_->OnCatalog(catalog_->Snapshot());  // the watch may have run it already; it is idempotent
  keeper_ = std::thread([this] { KeeperLoop(); });
  control_thread_ = std::thread([this] { ControlLoop(); });
  if (options_.metrics_port >= 0) {
    auto endpoint = MetricsEndpoint::Start(
        options_.metrics_host, options_.metrics_port, [this] { return RenderMetrics(); },
        [this] { return !draining_.load(); });
    if (!endpoint.ok()) return endpoint.status();
    metrics_endpoint_ = std::move(endpoint).value();
    spdlog::info("worker {}: metrics at http://{}:{}/metrics", options_.id, options_.metrics_host,
                 metrics_endpoint_->port());
  }
  spdlog::info("worker {} up: pool {}, {} executor(s), serving {} model(s), memory budget {:.0f} MB ({} eviction)",
               options_.id, options_.pool, options_.executors, ServedModels().size(),
               residency_->memory_budget() / 1e6, EvictionPolicyName(options_.eviction));
  return Status::Ok();
}

Worker::~Worker() { Drain(std::chrono::milliseconds(0)); }

int Worker::ThreadsPerBatch() const {
  if (options_.threads_per_executor > 0) return options_.threads_per_executor;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, options_.executors));
}

void Worker::KeeperLoop() {
  constexpr auto kUpkeep = std::chrono::milliseconds(50);
  auto next_upkeep = SteadyClock::now() + kUpkeep;
  while (!stop_keeper_) {
    // Also wake when a pull request is forgotten (its end went unseen): a
    // worker with nothing asked for must ask again.
    const auto forget = intake_->EarliestForgetAt();
    std::this_thread::sleep_until(next_upkeep < forget ? next_upkeep : forget + std::chrono::milliseconds(1));
    const auto now = SteadyClock::now();
    if (now < next_upkeep) {
      intake_->PostPlan();
      continue;
    }
    next_upkeep = now + kUpkeep;
    reaper_.Reap();
    intake_->Upkeep();
    queue_.ForEach([&](WorkItem& it) {
      if (now - it.last_progress >= std::chrono::milliseconds(it.model->spec->queue.ack_wait_ms / 2)) {
        runner_->Progress(it);
        it.last_progress = now;
      }
    });
    for (auto& e : executors_) e->KeepAlive(now);
  }
}

void Worker::ControlLoop() {
  // How often it looks for models to load or let go: one STREAM.INFO
  // request to the server each time.
  constexpr auto kPlacement = std::chrono::milliseconds(100);
  auto next_heartbeat = SteadyClock::now();
  while (!stop_keeper_) {
    const auto now = SteadyClock::now();
    if (now >= next_heartbeat) {
      Heartbeat();
      next_heartbeat = now + queue::kHeartbeatInterval;
    }
    residency_->Place();
    std::this_thread::sleep_until(now + kPlacement);
  }
}

std::optional<SequenceEngine::Stats> Worker::generation(const std::string& model) const {
  const std::shared_ptr<ServedModel> m = served_.Find(model);
  if (!m || !m->engine) return std::nullopt;
  return m->engine->stats();
}

int Worker::metrics_port() const { return metrics_endpoint_ ? metrics_endpoint_->port() : -1; }

std::string Worker::RenderMetrics() {
  const ResidencyView r = residency_->View();
  WorkerGaugeView view;
  view.resident = r.resident.size();
  view.failed = r.failed.size();
  view.loading = r.loading.size();
  view.memory_used = r.used;
  view.memory_budget = r.budget;
  for (const auto& m : served_.All()) {
    WorkerGaugeView::ModelView& v = view.models.emplace_back();
    v.id = m->spec->id;
    v.local_queue = m->queued.load(std::memory_order_relaxed);
    v.stream_backlog = intake_->Peek(m->slot).backlog;
    v.batch_stream_backlog = intake_->Peek(m->batch_slot).backlog;
    if (m->engine) {
      const SequenceEngine::Stats s = m->engine->stats();
      v.generates = true;
      v.running = s.running;
      v.waiting = s.waiting;
      v.kv_blocks_free = s.kv_blocks_free;
      v.kv_blocks_total = s.kv_blocks_total;
    }
  }
  return metrics_.Render(view);
}

void Worker::Heartbeat() {
  if (draining_ || !control_.workers) return;
  std::lock_guard order(heartbeat_mu_);  // written from several threads: newest last
  queue::WorkerInfo info;
  info.id = options_.id;
  info.host = HostName();
  info.pid = getpid();
  info.pool = options_.pool;
  info.executors = options_.executors;
  const LocalQueue::Totals totals = queue_.totals();
  info.batches = totals.batches;
  info.batch_items = totals.items;
  residency_->Describe(&info);
  info.ts_ms = UnixMillis();
  if (Status s = queue::PutHeartbeat(control_.workers.get(), info); !s.ok()) {
    spdlog::debug("worker: heartbeat not written: {}", s.message());
  }
}

void Worker::Drain(std::chrono::milliseconds timeout) {
  if (drained_) return;
  drained_ = true;
  draining_ = true;
  metrics_endpoint_.reset();  // a scrape reads the state torn down below
  const auto deadline = SteadyClock::now() + timeout;
  if (intake_ && intake_->connection()) {
    // Let outstanding pull requests run out (served or expired), working on
    // whatever they still bring; then take nothing more.
    intake_->StopPulling(std::min(deadline, SteadyClock::now() + options_.pull.expires +
                                                std::chrono::milliseconds(500)));
    intake_->Stop();
  }
  // What is queued or running finishes (bounded); anything accepted after
  // this goes back at once.
  items_.Close();
  items_.WaitEmpty(deadline);
  // The keeper touches executors and the queue, the control thread the
  // residency: they go first.
  stop_keeper_ = true;
  if (keeper_.joinable()) keeper_.join();
  if (control_thread_.joinable()) control_thread_.join();
  catalog_.reset();
  if (residency_) residency_->Stop();  // running generations go back too
  // Hand back what did not start; JetStream redelivers it at once.
  if (runner_) {
    for (auto& item : queue_.TakeAll()) runner_->Settle(item, Outcome::kShuttingDown);
  }
  queue_.Close();
  executors_.clear();  // joins; running batches finish
  if (control_.workers) {
    // Left behind, it goes stale: the pool counts this worker until then (worker_registry.h).
    const Status s = queue::DeleteHeartbeat(control_.workers.get(), options_.id);
    if (!s.ok()) spdlog::warn("worker {}: heartbeat not deleted: {}", options_.id, s.message());
  }
  residency_.reset();  // before the intake its engines publish on
  if (intake_) intake_->Close();
  intake_.reset();
  reaper_.Reap();
  if (span_exporter_) span_exporter_->Stop();  // the last spans go out
  spdlog::info("worker {} stopped", options_.id);
}

}  // namespace shoal::worker
