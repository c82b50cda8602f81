// The worker's residency half (worker.h): which catalog models it serves,
// which are loaded, loading them on demand, evicting, placement.
//
//   catalog watch ─▶ wanted_ (what it may serve); pinned ones queued to load
//   keeper tick ───▶ Place(): the stream's per-model counts + the workers'
//                    heartbeats → placement.h → load / release jobs
//   loader thread ─▶ one job at a time: plan room (residency_policy.h),
//                    evict, load, install the model and its pull slot
//
// A model whose load fails is installed failed: its pull slot answers every
// request MODEL_LOAD_FAILED (502) and acks it, so requests end at once
// instead of circling, and placement counts this worker as its holder so no
// other worker tries the same files. A new spec for it (re-registration)
// clears the failure.
//
// LoRA adapters are part of a base model's spec, but a change to them alone
// (an adapter registered or removed) does not reload the base: the loaded
// model is handed the new list (Model::UpdateLoras), right after a load and
// on every such catalog change.
//
// Threading: wanted_, loading_, residency_ and the served-model maps are
// guarded by models_mu_. Only the loader thread loads and installs, one
// model at a time, so two plans for room never overlap; unloads come from
// the loader (evictions), the catalog watch (a model changed or left) and
// the keeper (a cold replica), each one step under models_mu_.
#include <sys/sysinfo.h>

#include <algorithm>
#include <thread>

#include "common/log.h"
#include "queue/topology.h"
#include "queue/subjects.h"
#include "worker/placement.h"
#include "worker/worker.h"
#include "runtime/registry/registry.h"

namespace shoal::worker {
namespace {

// Whether a catalog change leaves what is loaded as it is: pinning or
// unpinning a model does not reload it, nor does adding or removing its LoRA
// adapters (the loaded model gets the new list: ApplyLoras).
bool SameModel(const ModelSpec& a, const ModelSpec& b) {
  ModelSpec a_base = a, b_base = b;
  a_base.pinned = b_base.pinned = false;
  a_base.loras.clear();
  b_base.loras.clear();
  return a_base.ToJson() == b_base.ToJson();
}

bool SameLoras(const std::vector<LoraSpec>& a, const std::vector<LoraSpec>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const LoraSpec& x, const LoraSpec& y) {
    return x.name == y.name && x.path == y.path && x.memory_bytes == y.memory_bytes;
  });
}

// Hands a loaded model its adapters (Model::UpdateLoras) and, when it takes
// them, lets its items name them (ServedModel::loras). A refusal is logged,
// not fatal: the model serves the base and the adapters it had before.
// The caller records `loras` in served.loras_given (under models_mu_ once
// the model is shared).
void ApplyLoras(ServedModel& served, const std::vector<LoraSpec>& loras) {
  if (Status s = served.model->UpdateLoras(loras); !s.ok()) {
    spdlog::error("worker: {}: its {} LoRA adapter(s) were refused, requests for new ones fail: {}", served.spec->id,
                  loras.size(), s.ToString());
    return;
  }
  served.loras.Set(loras);
  if (!loras.empty()) spdlog::info("worker: {} runs {} LoRA adapter(s)", served.spec->id, loras.size());
}

// How long a model stays before it may be evicted: the loads that make
// room for each other must not take turns faster than they can serve — a
// budget too small for the models in use then costs waiting, not a device
// busy loading. Four times its load, and at least a second.
SteadyClock::duration MinimumResidence(SteadyClock::duration load_time) {
  return std::max<SteadyClock::duration>(std::chrono::seconds(1), 4 * load_time);
}

// Cores one batch of the model may use: its profile's `threads` (a tuned
// entry sets it per hardware class), else the worker's share per executor.
int ModelThreads(const ModelSpec& spec, int worker_share) {
  return spec.threads > 0 ? static_cast<int>(spec.threads) : worker_share;
}

}  // namespace

uint64_t DefaultMemoryBudget() {
  struct sysinfo si {};
  if (sysinfo(&si) != 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(si.totalram) * si.mem_unit / 2;
}

bool Worker::Wants(const ModelSpec& spec) const {
  if (spec.pool != options_.pool) return false;
  if (!options_.models.empty() &&
      std::find(options_.models.begin(), options_.models.end(), spec.id) == options_.models.end()) {
    return false;
  }
  return FindRuntime(spec.runtime) != nullptr;
}

void Worker::OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot) {
  std::lock_guard reconcile(reconcile_mu_);
  if (draining_) return;
  std::vector<std::pair<std::string, const char*>> unload;  // and why
  std::vector<std::string> load;
  // Loaded models whose adapters changed, with their new list.
  std::vector<std::pair<std::shared_ptr<ServedModel>, std::shared_ptr<const ModelSpec>>> relora;
  {
    std::lock_guard lock(models_mu_);
    std::map<std::string, std::shared_ptr<const ModelSpec>> wanted;
    for (const auto& [id, spec] : *snapshot) {
      if (Wants(*spec)) wanted[id] = spec;
    }
    for (const auto& [id, served] : models_) {
      auto it = wanted.find(id);
      if (it == wanted.end()) {
        unload.emplace_back(id, "no longer in the catalog for this worker");
      } else if (!SameModel(*served->spec, *it->second)) {
        unload.emplace_back(id, "registered anew: loaded afresh on demand");
      } else if (served->model) {
        residency_->SetPinned(id, it->second->pinned);
        if (!SameLoras(served->loras_given, it->second->loras)) {
          served->loras_given = it->second->loras;  // claimed here, applied below
          relora.emplace_back(served, it->second);
        }
      }
    }
    for (const auto& [id, spec] : wanted) {
      const bool resident = models_.count(id) && std::none_of(unload.begin(), unload.end(),
                                                              [&](const auto& u) { return u.first == id; });
      if (spec->pinned && !resident) load.push_back(id);
    }
    wanted_ = std::move(wanted);
  }
  for (const auto& [id, why] : unload) Unload(id, why);
  // Outside models_mu_ (UpdateLoras may read files); reconcile_mu_ keeps the
  // updates of one model in catalog order, and Install hands a model its
  // list before it is visible here.
  for (const auto& [served, spec] : relora) ApplyLoras(*served, spec->loras);
  for (const auto& id : load) QueueLoad(id);
  Heartbeat();  // the gateways learn at once which models this worker serves
}

void Worker::QueueLoad(const std::string& id) {
  {
    std::lock_guard lock(models_mu_);
    if (loading_.count(id) || models_.count(id)) return;
    loading_.insert(id);
  }
  {
    std::lock_guard lock(load_mu_);
    load_jobs_.push_back(id);
  }
  load_cv_.notify_one();
}

void Worker::LoaderLoop() {
  for (;;) {
    std::string id;
    {
      std::unique_lock lock(load_mu_);
      load_cv_.wait(lock, [&] { return stop_loader_ || !load_jobs_.empty(); });
      if (stop_loader_) return;
      id = std::move(load_jobs_.front());
      load_jobs_.pop_front();
    }
    Load(id);
    std::lock_guard lock(models_mu_);
    loading_.erase(id);
  }
}

void Worker::Load(const std::string& id) {
  std::shared_ptr<const ModelSpec> spec;
  Result<std::vector<std::string>> victims = std::vector<std::string>{};
  {
    std::lock_guard lock(models_mu_);
    auto it = wanted_.find(id);
    if (it == wanted_.end() || models_.count(id) || draining_) return;
    spec = it->second;
    // Never a model with a batch in flight (its weights are in use) or work
    // queued here (it would go back to the stream and call it back), nor
    // one loaded less than its minimum residence ago.
    const auto now = SteadyClock::now();
    victims = residency_->PlanAdmit(
        id, spec->memory_bytes,
        [&](std::string_view v) {
          auto m = models_.find(v);
          if (m == models_.end()) return false;
          const ServedModel& s = *m->second;
          return s.in_flight.load(std::memory_order_relaxed) > 0 || s.queued.load(std::memory_order_relaxed) > 0 ||
                 now - s.installed_at < MinimumResidence(s.load_time);
        },
        now);
  }
  if (!victims.ok()) {
    // Its work waits in the stream (bounded by its deadline); the next tick
    // tries again, once a batch has finished or a model was unpinned.
    spdlog::debug("worker: no room for {} yet: {}", id, victims.status().message());
    return;
  }
  for (const auto& v : *victims) {
    Unload(v, "evicted to make room for " + id);
    metrics_.Evicted(v);
  }

  Runtime* runtime = FindRuntime(spec->runtime);
  LoadContext ctx;
  ctx.threads = ModelThreads(*spec, ThreadsPerBatch());
  spdlog::info("worker: loading {} ({} runtime, {:.1f} MB expected)", id, spec->runtime, spec->memory_bytes / 1e6);
  const auto t0 = SteadyClock::now();
  auto last_report = t0;
  ctx.progress = [&](double done) {  // a line every half second of a long load
    const auto now = SteadyClock::now();
    if (now - last_report < std::chrono::milliseconds(500)) return;
    last_report = now;
    spdlog::info("worker: loading {}: {:.0f} %", id, 100 * done);
  };
  auto model = runtime->Load(*spec, ctx);
  const auto load_time = SteadyClock::now() - t0;
  metrics_.Loaded(id, model.ok(), std::chrono::duration<double>(load_time).count());
  if (!model.ok()) {
    load_failures_.fetch_add(1);
    spdlog::error("worker: {} failed to load; its requests get MODEL_LOAD_FAILED until it is registered again: {}",
                  id, model.status().message());
    Install(spec, nullptr, Status(Code::kModelLoadFailed, id + " failed to load: " + model.status().message()),
            load_time);
    return;
  }
  Install(spec, std::move(model).value(), Status::Ok(), load_time);
}

int Worker::ThreadsPerBatch() const {
  if (options_.threads_per_executor > 0) return options_.threads_per_executor;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, options_.executors));
}

void Worker::Install(const std::shared_ptr<const ModelSpec>& spec, std::unique_ptr<Model> model,
                     Status load_error, SteadyClock::duration load_time) {
  if (draining_) return;  // loaded as the worker stopped: nothing will pull for it
  if (Status s = queue::EnsureConsumer(control_.js.get(), *spec); !s.ok()) {
    spdlog::error("worker: no consumer for {}: {}", spec->id, s.ToString());
    return;
  }
  const auto now = SteadyClock::now();
  auto served = std::make_shared<ServedModel>();
  served->spec = spec;
  served->metrics = &metrics_.For(spec->id);
  served->batching.Configure(spec->batching);
  served->model = std::move(model);
  served->load_error = std::move(load_error);
  served->loaded_unix_us = UnixMicros();
  served->installed_at = now;
  served->load_time = load_time;
  served->loras_given = spec->loras;
  if (served->model) ApplyLoras(*served, spec->loras);  // before any item can reach it
  served->slot = pull_->AddConsumer(queue::WorkStreamName(spec->pool), queue::ConsumerName(spec->id));
  served->last_batch_ns = now.time_since_epoch().count();
  if (served->model && served->model->generator()) {
    // Generators run their own continuous batch (generation_engine.h).
    served->engine = std::make_shared<GenerationEngine>(served.get(), served->model->generator(), pull_nc_.get(),
                                                        &reaper_, runner_.get(), &cancelled_, options_.id,
                                                        ModelThreads(*spec, ThreadsPerBatch()),
                                                        [this] { PostPlan(); });
  }
  bool thrashing = false;
  {
    std::lock_guard lock(models_mu_);
    // Gone or registered anew while it loaded: what was loaded is stale. (A
    // pin or unpin meanwhile is not a new model: it takes the latest flag.)
    auto w = wanted_.find(spec->id);
    if (w == wanted_.end() || !SameModel(*w->second, *spec)) return;
    // Adapters added or removed while it loaded: the latest list, before
    // the model is visible to OnCatalog (which takes it from here).
    if (served->model && !SameLoras(served->loras_given, w->second->loras)) {
      served->loras_given = w->second->loras;
      ApplyLoras(*served, w->second->loras);
    }
    if (served->model) {
      residency_->Loaded(spec->id, served->model->memory_bytes(), w->second->pinned,
                         std::chrono::duration_cast<std::chrono::nanoseconds>(load_time), now);
      thrashing = residency_->Thrashing(spec->id, now);
    }
    models_[spec->id] = served;
    if (by_slot_.size() <= static_cast<size_t>(served->slot)) by_slot_.resize(served->slot + 1);
    by_slot_[served->slot] = served;
  }
  if (served->model) {
    spdlog::info("worker: serving {} (loaded in {} ms, {:.1f} MB)", spec->id,
                 std::chrono::duration_cast<std::chrono::milliseconds>(load_time).count(),
                 served->model->memory_bytes() / 1e6);
  }
  if (thrashing) {
    spdlog::warn("worker: {} is thrashing: loaded {}+ times in {} s; the memory budget is too small for the "
                 "models in use",
                 spec->id, Residency::kThrashLoads, Residency::kThrashWindow.count());
  }
  Heartbeat();
  PostPlan();
}

void Worker::Unload(const std::string& id, std::string_view why) {
  std::shared_ptr<ServedModel> served;
  {
    std::lock_guard lock(models_mu_);
    auto it = models_.find(id);
    if (it == models_.end()) return;
    served = it->second;
    models_.erase(it);
    by_slot_[served->slot] = nullptr;
    if (served->model) residency_->Evicted(id, SteadyClock::now());
  }
  served->retired = true;
  pull_->DisableConsumer(served->slot);
  // What waits here goes back to the stream for whoever holds it next.
  for (auto& item : queue_.TakeAllFor(served.get())) runner_->Settle(item, Outcome::kNotServedHere);
  if (served->engine) served->engine->Stop(Outcome::kNotServedHere);
  spdlog::info("worker: unloaded {} ({})", id, why);
}

void Worker::Place() {
  auto waiting = queue::WorkMessagesByModel(control_.js.get(), options_.pool);
  if (!waiting.ok()) {
    spdlog::debug("worker: placement skipped: {}", waiting.status().message());
    return;
  }
  std::vector<PlacementPeer> peers;
  if (registry_) {
    for (const auto& w : registry_->Live()) {
      if (w.id == options_.id || w.pool != options_.pool) continue;
      PlacementPeer p{w.id, w.memory_budget, w.memory_pinned, w.memory_used, w.models, w.resident};
      p.holds.insert(p.holds.end(), w.loading.begin(), w.loading.end());
      p.holds.insert(p.holds.end(), w.failed.begin(), w.failed.end());
      peers.push_back(std::move(p));
    }
  }
  std::vector<std::string> load, release;
  std::string on_demand;
  const auto now = SteadyClock::now();
  {
    std::lock_guard lock(models_mu_);
    PlacementPeer self{options_.id, residency_->budget_bytes(), residency_->pinned_bytes(),
                       residency_->used_bytes(), {}, {}};
    for (const auto& [id, spec] : wanted_) self.serves.push_back(id);
    for (const auto& [id, served] : models_) self.holds.push_back(id);
    self.holds.insert(self.holds.end(), loading_.begin(), loading_.end());
    peers.push_back(std::move(self));

    // Items run since the last tick, for the eviction policy's use counts.
    for (auto& [id, served] : models_) {
      const uint64_t items = served->items_run.load(std::memory_order_relaxed);
      if (served->model && items > served->items_reported) residency_->Used(id, now, items - served->items_reported);
      served->items_reported = items;
    }
    // Loads on demand go one at a time, the model with the most work waiting
    // first, chosen afresh each tick: a queue of them would make the last
    // wait for every load before it, and one that found no room would go to
    // the back.
    bool loading_on_demand = false;
    for (const auto& id : loading_) {
      const auto w = wanted_.find(id);
      loading_on_demand = loading_on_demand || w == wanted_.end() || !w->second->pinned;
    }
    uint64_t most_waiting = 0;
    for (const auto& [id, spec] : wanted_) {
      const auto it = waiting->find(id);
      const uint64_t n = it == waiting->end() ? 0 : it->second;
      auto served = models_.find(id);
      if (served == models_.end()) {
        if (loading_.count(id)) continue;
        if (spec->pinned) {
          load.push_back(id);
        } else if (!loading_on_demand && n > most_waiting && ShouldLoad(id, spec->memory_bytes, n, options_.id, peers)) {
          on_demand = id;
          most_waiting = n;
        }
        continue;
      }
      if (!served->second->model || spec->pinned) continue;
      const auto idle = now - SteadyClock::time_point(SteadyClock::duration(
                                  served->second->last_batch_ns.load(std::memory_order_relaxed)));
      if (served->second->in_flight.load() == 0 && served->second->queued.load() == 0 &&
          ShouldRelease(id, spec->memory_bytes, n, options_.id, peers, idle)) {
        release.push_back(id);
      }
    }
  }
  if (!on_demand.empty()) load.push_back(on_demand);
  for (const auto& id : release) Unload(id, "an extra replica gone cold");
  for (const auto& id : load) QueueLoad(id);
  placement_rounds_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace shoal::worker
