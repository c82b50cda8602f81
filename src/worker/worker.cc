#include "worker/worker.h"

#include <unistd.h>

#include <algorithm>

#include "common/ids.h"
#include "common/log.h"
#include "queue/loop_connection.h"
#include "wire/generate.h"
#include "catalog/names.h"
#include "queue/subjects.h"

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

Worker::Worker(WorkerOptions options) : options_(std::move(options)) {}

Status Worker::Init() {
  auto control = queue::ControlPlane::Connect(options_.nats_url, "shoal-worker-control " + options_.id,
                                              options_.nats_security, options_.stream_limits.replicas);
  if (!control.ok()) return control.status();
  control_ = std::move(control).value();
  SHOAL_RETURN_IF_ERROR(
      queue::EnsureWorkStreamExists(control_.js.get(), options_.pool, options_.stream_limits));

  pull_ = std::make_unique<queue::PullSubscriber>(
      "_SHOAL.pull." + options_.id,
      [this](const queue::PullSubscriber::Delivery& d, queue::MsgPtr msg) {
        OnDelivered(d, std::move(msg));
      },
      options_.pull, [this](int) { Plan(); });
  intake_.Start();
  auto pull_nc = queue::ConnectOnLoop({.url = options_.nats_url,
                                       .security = options_.nats_security,
                                       .name = "shoal-worker-data " + options_.id},
                                      &intake_, [this] {
                                        pull_->Drain();
                                        DrainPushed();
                                        DrainCancels();
                                      });
  if (!pull_nc.ok()) return pull_nc.status();
  pull_nc_ = std::move(pull_nc).value();
  auto payloads = queue::OpenPayloadStore(
      options_.payload_store.empty() ? queue::DefaultPayloadStoreUrl() : options_.payload_store);
  if (!payloads.ok()) return payloads.status();  // fail closed, as the gateway does
  payloads_ = std::move(payloads).value();
  runner_ = std::make_unique<BatchRunner>(pull_nc_.get(), &reaper_, options_.id, &cancelled_, payloads_.get());
  SHOAL_RETURN_IF_ERROR(pull_->Start(pull_nc_.get(), &intake_));
  Status push_status;
  intake_.RunAndWait([&] {  // push_sub_ and cancel_sub_ are the loop's alone
    auto subscribe = [&](const std::string& subject, queue::SubscriptionPtr* out) {
      natsSubscription* sub = nullptr;
      Status s = queue::FromNats(natsConnection_SubscribeSync(&sub, pull_nc_.get(), subject.c_str()), subject);
      if (!s.ok()) return s;
      natsSubscription_SetPendingLimits(sub, -1, -1);
      out->reset(sub);
      return Status::Ok();
    };
    push_status = subscribe(queue::PushWildcard(options_.id), &push_sub_);
    if (push_status.ok()) push_status = subscribe(queue::CancelSubject(options_.pool), &cancel_sub_);
  });
  SHOAL_RETURN_IF_ERROR(push_status);
  for (int i = 0; i < options_.executors; ++i) {
    executors_.push_back(std::make_unique<Executor>(&queue_, runner_.get(), [this] { PostPlan(); }));
  }
  if (options_.memory_budget == 0) options_.memory_budget = DefaultMemoryBudget();
  residency_ = std::make_unique<Residency>(options_.memory_budget,
                                           MakeEvictionPolicy(options_.eviction, options_.max_models));
  auto registry = queue::WorkerRegistry::Open(control_.workers.get());
  if (!registry.ok()) return registry.status();
  registry_ = std::move(registry).value();
  loader_ = std::thread([this] { LoaderLoop(); });
  auto catalog = queue::CatalogWatch::Open(control_.models.get(), [this](auto snap) { OnCatalog(snap); });
  if (!catalog.ok()) return catalog.status();
  catalog_ = std::move(catalog).value();
  OnCatalog(catalog_->Snapshot());  // the watch may have run it already; it is idempotent
  keeper_ = std::thread([this] { KeeperLoop(); });
  if (options_.metrics_port >= 0) {
    auto endpoint = MetricsEndpoint::Start(options_.metrics_host, options_.metrics_port,
                                           [this] { return RenderMetrics(); });
    if (!endpoint.ok()) return endpoint.status();
    metrics_endpoint_ = std::move(endpoint).value();
    spdlog::info("worker {}: metrics at http://{}:{}/metrics", options_.id, options_.metrics_host,
                 metrics_endpoint_->port());
  }
  spdlog::info("worker {} up: pool {}, {} executor(s), serving {} model(s), memory budget {:.0f} MB ({} eviction)",
               options_.id, options_.pool, options_.executors, ServedModels().size(),
               options_.memory_budget / 1e6, EvictionPolicyName(options_.eviction));
  return Status::Ok();
}

Worker::~Worker() { Drain(std::chrono::milliseconds(0)); }

void Worker::OnDelivered(const queue::PullSubscriber::Delivery& d, queue::MsgPtr msg) {
  std::shared_ptr<ServedModel> served;
  {
    std::lock_guard lock(models_mu_);
    if (static_cast<size_t>(d.slot) < by_slot_.size()) served = by_slot_[d.slot];
  }
  WorkItem item;
  Status s = ParseWorkItem(std::move(msg), served, d, &item);
  if (!served || served->retired) {
    if (!item.ack.empty()) runner_->Settle(item, Outcome::kNotServedHere);
    return;
  }
  if (!s.ok()) {
    // Nobody to answer: terminate it so it does not circle forever.
    spdlog::warn("worker: malformed work message terminated: {}", s.message());
    if (!item.ack.empty()) {
      natsConnection_PublishString(pull_nc_.get(), std::string(item.ack).c_str(), "+TERM");
    }
    return;
  }
  const double mean = served->mean_item_cost.load(std::memory_order_relaxed);
  served->mean_item_cost.store(mean == 0 ? item.cost : 0.9 * mean + 0.1 * item.cost,
                               std::memory_order_relaxed);
  served->last_delivery_ns.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  if (served->engine && item.task == wire::kTaskGenerate) {  // tokenize runs on the executors
    served->engine->Push(std::move(item));
  } else {
    queue_.Push(std::move(item));
  }
  Plan();
}

void Worker::DrainPushed() {
  if (!push_sub_) return;
  queue::DrainSubscription(push_sub_.get(), [this](queue::MsgPtr m) { OnPushed(std::move(m)); });
}

void Worker::DrainCancels() {
  if (!cancel_sub_) return;
  queue::DrainSubscription(cancel_sub_.get(), [this](queue::MsgPtr m) {
    if (!cancelled_.AddNotice(queue::Payload(m.get()), UnixMillis())) {
      spdlog::warn("worker: malformed cancellation ignored");
    }
  });
}

void Worker::OnPushed(queue::MsgPtr msg) {
  // shoal.push.<worker-token>.<model-token>: the model is the last token.
  std::string_view subject = natsMsg_GetSubject(msg.get());
  auto model_id = queue::ModelIdFromToken(subject.substr(subject.rfind('.') + 1));
  std::shared_ptr<ServedModel> served;
  if (model_id.ok()) {
    std::lock_guard lock(models_mu_);
    if (auto it = models_.find(*model_id); it != models_.end()) served = it->second;
  }
  WorkItem item;
  if (Status s = ParsePushedItem(std::move(msg), served, &item); !s.ok()) {
    spdlog::warn("worker: malformed pushed message dropped: {}", s.message());
    return;  // no reply subject: nobody to answer
  }
  if (!served || served->retired) {
    // The gateway's view of this worker is stale (or wrong): say so at once.
    runner_->Settle(item, Outcome::kNotServedHere);
    return;
  }
  pushed_items_.fetch_add(1, std::memory_order_relaxed);
  if (served->engine && item.task == wire::kTaskGenerate) {  // tokenize runs on the executors
    served->engine->Push(std::move(item));
  } else {
    queue_.Push(std::move(item));
  }
}

// Plans run on the intake loop: their pull requests then leave in the
// loop's next write (published from another thread they could wait for
// one), and one thread plans at a time.
void Worker::PostPlan() {
  intake_.Post([this] { Plan(); });
}

void Worker::Plan() {
  if (draining_) return;
  std::vector<std::shared_ptr<ServedModel>> served, generators;
  {
    std::lock_guard lock(models_mu_);
    for (const auto& [id, m] : models_) (m->engine ? generators : served).push_back(m);
  }
  // A generator asks for as many sequences as it could start now; it runs
  // beside the executors, so it is not part of their plan.
  for (const auto& g : generators) {
    if (const int64_t free = g->engine->FreeSlots(); free > 0 && !g->retired) pull_->Refill(g->slot, free);
  }
  const auto now = SteadyClock::now();
  std::vector<ModelPullState> state;
  state.reserve(served.size());
  for (const auto& m : served) state.push_back(PullStateOf(*m, now));
  const PullPlan plan = PlanPulls(state, options_.executors - queue_.running());
  for (size_t i = 0; i < served.size(); ++i) {
    if (plan.probe[i]) pull_->Probe(served[i]->slot);
    if (plan.want[i] > 0) Ask(*served[i], state[i], plan.want[i], now);
  }
}

ModelPullState Worker::PullStateOf(const ServedModel& m, SteadyClock::time_point now) const {
  const BatchingSpec& b = m.spec->batching;
  const queue::PullSubscriber::SlotView pull = pull_->Peek(m.slot);
  ModelPullState st;
  st.queued = m.queued.load(std::memory_order_relaxed);
  st.backlog = pull.backlog;
  // Other workers take from the same backlog: what was heard a moment ago
  // is all that is worth trusting.
  st.known = pull.credit > 0 || now - pull.backlog_at < std::chrono::milliseconds(10);
  st.probing = pull.probing;
  st.batch = PredictedBatchItems(b.max_batch_requests, m.batching.CostCap(),
                                 m.mean_item_cost.load(std::memory_order_relaxed));
  // How long its oldest waiting work may have waited: since any worker last
  // took from it, this one started a batch of it, or its backlog was seen
  // empty, whichever was last — and for a deep backlog, as long as it has
  // been building (backlog / arrival rate).
  const auto last_batch =
      SteadyClock::time_point(SteadyClock::duration(m.last_batch_ns.load(std::memory_order_relaxed)));
  st.since_batch = now - std::max({last_batch, pull.empty_at, pull.taken_at});
  if (pull.arrivals_per_s > 0 && pull.backlog > 0) {
    st.since_batch = std::max(st.since_batch, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  std::chrono::duration<double>(pull.backlog / pull.arrivals_per_s)));
  }
  return st;
}

void Worker::Ask(ServedModel& m, const ModelPullState& st, int64_t want, SteadyClock::time_point now) {
  if (want == 1 && st.queued == 0) {
    pull_->Refill(m.slot, 1, DoorbellExpiry(m, now));
    return;
  }
  // A batch's worth. What the stream holds comes at once, so with a backlog
  // the request is short (a stale backlog costs little); without one it
  // fills the batch while the batch waits, and no longer.
  const BatchingSpec& b = m.spec->batching;
  const auto expiry = st.backlog > 0 ? std::chrono::milliseconds(2)
                                     : std::chrono::milliseconds(std::max<uint32_t>(
                                           5, b.adaptive.enabled ? b.adaptive.max_wait_ms : b.max_batch_wait_ms));
  if (pull_->Refill(m.slot, want, expiry) && st.backlog > 0 && st.queued > 0) {
    // The batch forming here should take what is on its way: up to a round
    // trip or two, until that many items are here.
    m.fill_items.store(st.queued + std::min(st.backlog, want), std::memory_order_relaxed);
    m.fill_until_ns.store((now + std::chrono::milliseconds(2)).time_since_epoch().count(),
                          std::memory_order_relaxed);
  }
}

// A doorbell outlives the idle spell it was rung for (pull_planner.h), so it
// lasts a quarter of the model's quiet time: a few milliseconds while its
// work comes often, up to the long-poll expiry when it is quiet.
std::chrono::milliseconds Worker::DoorbellExpiry(const ServedModel& m, SteadyClock::time_point now) const {
  const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(
      now.time_since_epoch() - SteadyClock::duration(m.last_delivery_ns.load(std::memory_order_relaxed)));
  return std::clamp(quiet / 4, std::chrono::milliseconds(5), options_.pull.expires);
}

void Worker::KeeperLoop() {
  constexpr auto kUpkeep = std::chrono::milliseconds(50);
  // How often it looks for models to load or let go: one STREAM.INFO
  // request to the server each time.
  constexpr auto kPlacement = std::chrono::milliseconds(100);
  auto next_heartbeat = SteadyClock::now();
  auto next_placement = SteadyClock::now();
  auto next_upkeep = SteadyClock::now() + kUpkeep;
  while (!stop_keeper_) {
    // Also wake when a pull request is forgotten (its end went unseen): a
    // worker with nothing asked for must ask again.
    const auto forget = pull_->EarliestForgetAt();
    std::this_thread::sleep_until(next_upkeep < forget ? next_upkeep : forget + std::chrono::milliseconds(1));
    const auto now = SteadyClock::now();
    if (now < next_upkeep) {
      PostPlan();
      continue;
    }
    next_upkeep = now + kUpkeep;
    reaper_.Reap();
    pull_->Tick();
    PostPlan();
    queue_.ForEach([&](WorkItem& it) {
      if (now - it.last_progress >= std::chrono::milliseconds(it.model->spec->queue.ack_wait_ms / 2)) {
        runner_->Progress(it);
        it.last_progress = now;
      }
    });
    for (auto& e : executors_) e->KeepAlive(now);
    if (now >= next_placement) {
      Place();
      next_placement = now + kPlacement;
    }
    if (now >= next_heartbeat) {
      Heartbeat();
      next_heartbeat = now + queue::kHeartbeatInterval;
    }
  }
}

std::vector<std::string> Worker::ServedModels() const {
  std::lock_guard lock(models_mu_);
  std::vector<std::string> ids;
  for (const auto& [id, spec] : wanted_) ids.push_back(id);
  return ids;
}

std::optional<GenerationEngine::Stats> Worker::generation(const std::string& model) const {
  std::lock_guard lock(models_mu_);
  auto it = models_.find(model);
  if (it == models_.end() || !it->second->engine) return std::nullopt;
  return it->second->engine->stats();
}

int Worker::metrics_port() const { return metrics_endpoint_ ? metrics_endpoint_->port() : -1; }

std::string Worker::RenderMetrics() {
  WorkerGaugeView view;
  {
    std::lock_guard lock(models_mu_);
    for (const auto& [id, m] : models_) {
      (m->model ? view.resident : view.failed) += 1;
      view.models.push_back({id, m->queued.load(std::memory_order_relaxed), pull_->Peek(m->slot).backlog});
    }
    view.loading = loading_.size();
    view.memory_used = residency_->used_bytes();
    view.memory_budget = residency_->budget_bytes();
  }
  return metrics_.Render(view);
}

ResidencyView Worker::residency() const {
  std::lock_guard lock(models_mu_);
  ResidencyView v;
  v.budget = residency_->budget_bytes();
  v.used = residency_->used_bytes();
  for (const auto& [id, m] : models_) (m->model ? v.resident : v.failed).push_back(id);
  v.loading.assign(loading_.begin(), loading_.end());
  v.counters = residency_->counters();
  v.load_failures = load_failures_.load();
  v.placement_rounds = placement_rounds_.load();
  return v;
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
  const auto now = SteadyClock::now();
  {
    std::lock_guard lock(models_mu_);
    for (const auto& [id, spec] : wanted_) info.models.push_back(id);
    for (const auto& [id, m] : models_) {
      (m->model ? info.resident : info.failed).push_back(id);
      info.queued += m->queued.load(std::memory_order_relaxed);
      info.in_flight += m->in_flight.load(std::memory_order_relaxed);
    }
    info.loading.assign(loading_.begin(), loading_.end());
    info.memory_budget = residency_->budget_bytes();
    info.memory_used = residency_->used_bytes();
    info.memory_pinned = residency_->pinned_bytes();
    for (const auto& m : residency_->Models()) {
      if (m.pinned) info.pinned.push_back(m.id);
      if (residency_->Thrashing(m.id, now)) info.thrashing.push_back(m.id);
    }
    info.loads = residency_->counters().loads;
    info.evictions = residency_->counters().evictions;
  }
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
  if (pull_nc_) {  // the intake loop runs
    pull_->StopRefilling();
    // Let outstanding pull requests run out (served or expired), working on
    // whatever they still bring.
    const auto pulls_end = std::min(deadline, SteadyClock::now() + options_.pull.expires +
                                                  std::chrono::milliseconds(500));
    while (pull_->TotalCredit() > 0 && SteadyClock::now() < pulls_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    intake_.RunAndWait([&] {
      pull_->Stop();
      // Pushes that already arrived are queued and run; later ones go
      // unanswered (the push baseline has no redelivery) until gateways
      // drop this worker from their view.
      DrainPushed();
      if (push_sub_) natsSubscription_Unsubscribe(push_sub_.get());
      push_sub_.reset();
      if (cancel_sub_) natsSubscription_Unsubscribe(cancel_sub_.get());
      cancel_sub_.reset();
    });
  }
  auto busy = [this] {
    if (queue_.size() > 0) return true;
    std::lock_guard lock(models_mu_);
    for (const auto& [id, m] : models_) {
      if (m->in_flight.load() > 0 || m->queued.load() > 0) return true;
    }
    return false;
  };
  while (busy() && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The keeper touches executors and the queue: it goes first.
  stop_keeper_ = true;
  if (keeper_.joinable()) keeper_.join();
  {
    std::lock_guard lock(load_mu_);
    stop_loader_ = true;  // a load under way finishes first
  }
  load_cv_.notify_all();
  if (loader_.joinable()) loader_.join();
  // Generations still running go back too (a retry starts them again; the
  // gateway relays only what it has not sent).
  {
    std::lock_guard lock(models_mu_);
    for (const auto& [id, m] : models_) {
      if (m->engine) m->engine->Stop(Outcome::kShuttingDown);
    }
  }
  // Hand back what did not start; JetStream redelivers it at once.
  if (runner_) {
    for (auto& item : queue_.TakeAll()) runner_->Settle(item, Outcome::kShuttingDown);
  }
  queue_.Close();
  executors_.clear();  // joins; running batches finish
  catalog_.reset();
  if (control_.workers) queue::DeleteHeartbeat(control_.workers.get(), options_.id);
  if (pull_nc_) {
    natsConnection_FlushTimeout(pull_nc_.get(), 2000);  // the last results and acks
    intake_.RunAndWait([&] { pull_nc_.reset(); });      // closed on its own loop
  }
  intake_.Stop();  // after the connection's cleanup, which it runs first
  pull_.reset();
  reaper_.Reap();
  spdlog::info("worker {} stopped", options_.id);
}

}  // namespace shoal::worker
