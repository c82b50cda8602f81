#include "worker/resident_models.h"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>

#include "common/log.h"
#include "queue/subjects.h"
#include "queue/topology.h"
#include "runtime/registry/registry.h"
#include "worker/generation_engine.h"
#include "worker/model_drafter.h"
#include "worker/stream_relay.h"
#include "worker/placement.h"

namespace shoal::worker {
namespace {

// Whether a catalog change leaves what is loaded as it is: pinning or
// unpinning a model does not reload it, nor does starting or ending a canary, nor does adding or removing its LoRA
// adapters (the loaded model gets the new list: ApplyLoras).
bool SameModel(const ModelSpec& a, const ModelSpec& b) {
  ModelSpec a_base = a, b_base = b;
  a_base.pinned = b_base.pinned = false;
  a_base.canary = b_base.canary = {};  // the gateways' routing, not the model
  a_base.loras.clear();
  b_base.loras.clear();
  return a_base.ToJson() == b_base.ToJson();
}

bool SameLoras(const std::vector<LoraSpec>& a, const std::vector<LoraSpec>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const LoraSpec& x, const LoraSpec& y) {
    return x.name == y.name && x.path == y.path && x.artifact == y.artifact && x.memory_bytes == y.memory_bytes;
  });
}

// Hands a loaded model its adapters (Model::UpdateLoras) and, when it takes
// them, lets its items name them (ServedModel::loras). A refusal is logged,
// not fatal: the model serves the base and the adapters it had before.
// The caller records `loras` in served.loras_given (under the residency lock once
// the model is shared). Adapters from the model store are fetched first.
void ApplyLoras(ServedModel& served, const std::vector<LoraSpec>& loras, ModelFiles& files) {
  auto local = files.LocalizeLoras(loras, &served.files);
  if (Status s = local.ok() ? served.model->UpdateLoras(LoraConfigs(*local)) : local.status(); !s.ok()) {
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

uint64_t BudgetOrDefault(uint64_t budget) { return budget > 0 ? budget : DefaultMemoryBudget(); }

}  // namespace

uint64_t DefaultMemoryBudget() {
  struct sysinfo si {};
  if (sysinfo(&si) != 0) return uint64_t{4} << 30;
  return static_cast<uint64_t>(si.totalram) * si.mem_unit / 2;
}

ResidentModels::ResidentModels(Options options, Parts parts)
    : options_(std::move(options)),
      parts_(std::move(parts)),
      residency_(BudgetOrDefault(options_.memory_budget), MakeEvictionPolicy(options_.eviction, options_.max_models)) {
  options_.memory_budget = BudgetOrDefault(options_.memory_budget);
  loader_ = std::thread([this] {
    while (std::optional<std::string> id = loads_.Pop()) {
      Load(*id);
      std::lock_guard lock(mu_);
      loading_.erase(*id);
    }
  });
}

ResidentModels::~ResidentModels() { Stop(); }

void ResidentModels::Stop() {
  stopped_ = true;
  loads_.Close();  // a load under way finishes first
  if (loader_.joinable()) loader_.join();
  // Generations still running go back too (a retry starts them again; the
  // gateway relays only what it has not sent).
  for (const auto& m : parts_.served->All()) {
    if (m->engine) m->engine->Stop(Outcome::kShuttingDown);
  }
}

// Cores one batch of the model may use: its profile's `threads` (a tuned
// entry sets it per hardware class), else the worker's share per executor.
int ResidentModels::ThreadsFor(const ModelSpec& spec) const {
  return spec.threads > 0 ? static_cast<int>(spec.threads) : options_.threads_per_batch;
}

bool ResidentModels::Wants(const ModelSpec& spec) const {
  if (spec.pool != options_.pool) return false;
  if (!options_.models.empty() &&
      std::find(options_.models.begin(), options_.models.end(), spec.id) == options_.models.end()) {
    return false;
  }
  return parts_.runtimes->For(spec) != nullptr;
}

void ResidentModels::OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot) {
  std::lock_guard reconcile(reconcile_mu_);
  if (stopped_) return;
  std::vector<std::pair<std::string, const char*>> unload;  // and why
  std::vector<std::string> load;
  // Loaded models whose adapters changed, with their new list.
  std::vector<std::pair<std::shared_ptr<ServedModel>, std::shared_ptr<const ModelSpec>>> relora;
  {
    std::lock_guard lock(mu_);
    std::map<std::string, std::shared_ptr<const ModelSpec>> wanted;
    for (const auto& [id, spec] : *snapshot) {
      if (Wants(*spec)) wanted[id] = spec;
    }
    for (const auto& served : parts_.served->All()) {
      const std::string& id = served->spec->id;
      auto it = wanted.find(id);
      if (it == wanted.end()) {
        unload.emplace_back(id, "no longer in the catalog for this worker");
      } else if (!SameModel(*served->spec, *it->second)) {
        unload.emplace_back(id, "registered anew: loaded afresh on demand");
      } else if (served->model) {
        residency_.SetPinned(id, it->second->pinned);
        if (!SameLoras(served->loras_given, it->second->loras)) {
          served->loras_given = it->second->loras;  // claimed here, applied below
          relora.emplace_back(served, it->second);
        }
      }
    }
    for (const auto& [id, spec] : wanted) {
      const bool resident = parts_.served->Contains(id) && std::none_of(unload.begin(), unload.end(),
                                                                        [&](const auto& u) { return u.first == id; });
      if (spec->pinned && !resident) load.push_back(id);
    }
    wanted_ = std::move(wanted);
    catalog_ = snapshot;
  }
  for (const auto& [id, why] : unload) Unload(id, why);
  // Outside mu_ (UpdateLoras may read files); reconcile_mu_ keeps the
  // updates of one model in catalog order, and Install hands a model its
  // list before it is visible here.
  for (const auto& [served, spec] : relora) ApplyLoras(*served, spec->loras, *parts_.files);
  for (const auto& id : load) QueueLoad(id);
  parts_.changed();  // the gateways learn at once which models this worker serves
}

void ResidentModels::QueueLoad(const std::string& id) {
  {
    std::lock_guard lock(mu_);
    if (loading_.count(id) || parts_.served->Contains(id)) return;
    loading_.insert(id);
  }
  loads_.Push(id);
}

void ResidentModels::Load(const std::string& id) {
  std::shared_ptr<const ModelSpec> spec;
  Result<std::vector<std::string>> victims = std::vector<std::string>{};
  {
    std::lock_guard lock(mu_);
    auto it = wanted_.find(id);
    if (it == wanted_.end() || parts_.served->Contains(id) || stopped_) return;
    spec = it->second;
    // Never a model with a batch in flight (its weights are in use) or work
    // queued here (it would go back to the stream and call it back), nor
    // one loaded less than its minimum residence ago.
    const auto now = SteadyClock::now();
    victims = residency_.PlanAdmit(
        id, spec->memory_bytes,
        [&](std::string_view v) {
          const std::shared_ptr<ServedModel> m = parts_.served->Find(v);
          if (!m) return false;
          const ServedModel& s = *m;
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
    parts_.metrics->Evicted(v);
  }

  Runtime* runtime = parts_.runtimes->For(*spec);
  LoadContext ctx;
  ctx.threads = ThreadsFor(*spec);
  spdlog::info("worker: loading {} ({} runtime, {:.1f} MB expected)", id, spec->runtime, spec->memory_bytes / 1e6);
  const auto t0 = SteadyClock::now();
  auto last_report = t0;
  ctx.progress = [&](double done) {  // a line every half second of a long load
    const auto now = SteadyClock::now();
    if (now - last_report < std::chrono::milliseconds(500)) return;
    last_report = now;
    spdlog::info("worker: loading {}: {:.0f} %", id, 100 * done);
  };
  FileLeases files;  // the cache entries it loads from, kept while it is loaded
  auto local = parts_.files->Localize(*spec, &files);
  auto config = local.ok() ? ModelConfig::FromSpec(*local) : Result<ModelConfig>(local.status());
  auto model = config.ok() ? runtime->Load(*config, ctx) : Result<std::unique_ptr<Model>>(config.status());
  Result<std::unique_ptr<Model>> draft = std::unique_ptr<Model>();
  if (model.ok()) draft = LoadDraft(*spec, **model, ctx, &files);
  if (!draft.ok()) model = draft.status();
  const auto load_time = SteadyClock::now() - t0;
  parts_.metrics->Loaded(id, model.ok(), std::chrono::duration<double>(load_time).count());
  if (!model.ok()) {
    load_failures_.fetch_add(1);
    spdlog::error("worker: {} failed to load; its requests get MODEL_LOAD_FAILED until it is registered again: {}",
                  id, model.status().message());
    Install(spec, nullptr, nullptr,
            Status(Code::kModelLoadFailed, id + " failed to load: " + model.status().message()), load_time, {});
    return;
  }
  Install(spec, std::move(model).value(), std::move(draft).value(), Status::Ok(), load_time, std::move(files));
}

Result<std::unique_ptr<Model>> ResidentModels::LoadDraft(const ModelSpec& spec, Model& target,
                                                         const LoadContext& ctx, FileLeases* files) {
  const SpeculativeSpec& s = spec.speculative;
  if (!s.enabled()) return std::unique_ptr<Model>();
  if (!target.generator()) {
    return InvalidInput("speculative: the " + spec.runtime +
                        " runtime batches its generation itself; speculative decoding runs on the generators the "
                        "worker batches (the native runtime's)");
  }
  if (s.ngram()) return std::unique_ptr<Model>();
  std::shared_ptr<const ModelSpec> draft_spec;
  {
    std::lock_guard lock(mu_);
    if (catalog_) {
      auto it = catalog_->find(s.draft);
      if (it != catalog_->end()) draft_spec = it->second;
    }
  }
  if (!draft_spec) return InvalidInput("speculative.draft: no model '" + s.draft + "' is registered");
  Runtime* runtime = parts_.runtimes->For(*draft_spec);
  if (!runtime) return InvalidInput("speculative.draft: this worker has no " + draft_spec->runtime + " runtime");
  spdlog::info("worker: loading {} as the draft model of {}", s.draft, spec.id);
  SHOAL_ASSIGN_OR_RETURN(ModelSpec local, parts_.files->Localize(*draft_spec, files));
  SHOAL_ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::FromSpec(local));
  auto draft = runtime->Load(config, ctx);
  if (!draft.ok()) return InvalidInput("speculative.draft: " + s.draft + ": " + draft.status().message());
  if (!(*draft)->generator()) {
    return InvalidInput("speculative.draft: '" + s.draft + "' is not a generator the worker batches");
  }
  SHOAL_RETURN_IF_ERROR(ModelDrafter::CheckCompatible(*target.generator(), *(*draft)->generator()));
  return std::move(draft).value();
}

void ResidentModels::Install(const std::shared_ptr<const ModelSpec>& spec, std::unique_ptr<Model> model,
                             std::unique_ptr<Model> draft, Status load_error, SteadyClock::duration load_time,
                             FileLeases files) {
  if (stopped_) return;  // loaded as the worker stopped: nothing will pull for it
  if (Status s = queue::EnsureConsumer(parts_.js, *spec); !s.ok()) {
    spdlog::error("worker: no consumer for {}: {}", spec->id, s.ToString());
    return;
  }
  const auto now = SteadyClock::now();
  auto served = std::make_shared<ServedModel>();
  served->spec = spec;
  served->metrics = &parts_.metrics->For(spec->id);
  served->batching.Configure(spec->batching);
  served->model = std::move(model);
  served->draft = std::move(draft);
  served->files = std::move(files);
  served->load_error = std::move(load_error);
  served->loaded_unix_us = UnixMicros();
  served->installed_at = now;
  served->load_time = load_time;
  served->loras_given = spec->loras;
  if (served->model) ApplyLoras(*served, spec->loras, *parts_.files);  // before any item can reach it
  const std::string stream = queue::WorkStreamName(spec->pool);
  served->slot = parts_.intake->AddConsumer(stream, queue::ConsumerName(spec->id, queue::Priority::kInteractive));
  served->batch_slot = parts_.intake->AddConsumer(stream, queue::ConsumerName(spec->id, queue::Priority::kBatch));
  served->last_batch_ns = now.time_since_epoch().count();
  if (served->model && served->model->generator()) {
    // Generators run their own continuous batch (generation_engine.h).
    served->engine = std::make_shared<GenerationEngine>(
        served.get(), served->model->generator(), served->draft ? served->draft->generator() : nullptr,
        parts_.intake->connection(), parts_.reaper, parts_.runner,
        parts_.cancelled, options_.worker_id, ThreadsFor(*spec), [intake = parts_.intake] { intake->PostPlan(); });
  } else if (served->model && served->model->streaming_generator()) {
    // Or their runtime's, which the relay streams from (stream_relay.h).
    served->engine = std::make_shared<StreamRelay>(
        served.get(), served->model->streaming_generator(), parts_.intake->connection(), parts_.reaper,
        parts_.runner, parts_.cancelled, options_.worker_id, [intake = parts_.intake] { intake->PostPlan(); });
  }
  bool thrashing = false;
  {
    std::lock_guard lock(mu_);
    // Gone or registered anew while it loaded: what was loaded is stale. (A
    // pin or unpin meanwhile is not a new model: it takes the latest flag.)
    auto w = wanted_.find(spec->id);
    if (w == wanted_.end() || !SameModel(*w->second, *spec)) return;
    // Adapters added or removed while it loaded: the latest list, before
    // the model is visible to OnCatalog (which takes it from here).
    if (served->model && !SameLoras(served->loras_given, w->second->loras)) {
      served->loras_given = w->second->loras;
      ApplyLoras(*served, w->second->loras, *parts_.files);
    }
    if (served->model) {
      residency_.Loaded(spec->id, served->model->memory_bytes() + (served->draft ? served->draft->memory_bytes() : 0),
                        w->second->pinned,
                        std::chrono::duration_cast<std::chrono::nanoseconds>(load_time), now);
      thrashing = residency_.Thrashing(spec->id, now);
    }
    parts_.served->Install(served);
  }
  if (served->model) {
    spdlog::info("worker: serving {} (loaded in {} ms, {:.1f} MB)", spec->id,
                 std::chrono::duration_cast<std::chrono::milliseconds>(load_time).count(),
                 (served->model->memory_bytes() + (served->draft ? served->draft->memory_bytes() : 0)) / 1e6);
  }
  if (thrashing) {
    spdlog::warn("worker: {} is thrashing: loaded {}+ times in {} s; the memory budget is too small for the "
                 "models in use",
                 spec->id, Residency::kThrashLoads, Residency::kThrashWindow.count());
  }
  parts_.changed();
  parts_.intake->PostPlan();
}

void ResidentModels::Unload(const std::string& id, std::string_view why) {
  std::shared_ptr<ServedModel> served;
  {
    std::lock_guard lock(mu_);
    served = parts_.served->Remove(id);
    if (!served) return;
    if (served->model) residency_.Evicted(id, SteadyClock::now());
  }
  served->retired = true;
  parts_.intake->DisableConsumer(served->slot);
  parts_.intake->DisableConsumer(served->batch_slot);
  // What waits here goes back to the stream for whoever holds it next.
  for (auto& item : parts_.queue->TakeAllFor(served.get())) {
    parts_.runner->Settle(item, Outcome::kNotServedHere);
    parts_.reaper->Add(item.msg.release());
  }
  if (served->engine) served->engine->Stop(Outcome::kNotServedHere);
  spdlog::info("worker: unloaded {} ({})", id, why);
}

void ResidentModels::Place() {
  auto waiting = queue::WorkMessagesByModel(parts_.js, options_.pool);
  if (!waiting.ok()) {
    spdlog::debug("worker: placement skipped: {}", waiting.status().message());
    return;
  }
  std::vector<PlacementPeer> peers;
  if (parts_.registry) {
    for (const auto& w : parts_.registry->Live()) {
      if (w.id == options_.worker_id || w.pool != options_.pool) continue;
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
    std::lock_guard lock(mu_);
    const std::vector<std::shared_ptr<ServedModel>> installed = parts_.served->All();
    PlacementPeer self{options_.worker_id, residency_.budget_bytes(), residency_.pinned_bytes(),
                       residency_.used_bytes(), {}, {}};
    for (const auto& [id, spec] : wanted_) self.serves.push_back(id);
    for (const auto& served : installed) self.holds.push_back(served->spec->id);
    self.holds.insert(self.holds.end(), loading_.begin(), loading_.end());
    peers.push_back(std::move(self));

    // Items run since the last tick, for the eviction policy's use counts.
    for (const auto& served : installed) {
      const uint64_t items = served->items_run.load(std::memory_order_relaxed);
      if (served->model && items > served->items_reported) {
        residency_.Used(served->spec->id, now, items - served->items_reported);
      }
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
      const uint64_t n = it == waiting->end() ? 0 : it->second.total();
      const std::shared_ptr<ServedModel> served = parts_.served->Find(id);
      if (!served) {
        if (loading_.count(id)) continue;
        if (spec->pinned) {
          load.push_back(id);
        } else if (!loading_on_demand && n > most_waiting &&
                   ShouldLoad(id, spec->memory_bytes, n, options_.worker_id, peers)) {
          on_demand = id;
          most_waiting = n;
        }
        continue;
      }
      if (!served->model || spec->pinned) continue;
      const auto idle = now - SteadyClock::time_point(
                                  SteadyClock::duration(served->last_batch_ns.load(std::memory_order_relaxed)));
      if (served->in_flight.load() == 0 && served->queued.load() == 0 &&
          ShouldRelease(id, spec->memory_bytes, n, options_.worker_id, peers, idle)) {
        release.push_back(id);
      }
    }
  }
  if (!on_demand.empty()) load.push_back(on_demand);
  for (const auto& id : release) Unload(id, "an extra replica gone cold");
  for (const auto& id : load) QueueLoad(id);
  placement_rounds_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::string> ResidentModels::Wanted() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> ids;
  for (const auto& [id, spec] : wanted_) ids.push_back(id);
  return ids;
}

ResidencyView ResidentModels::View() const {
  std::lock_guard lock(mu_);
  ResidencyView v;
  v.budget = residency_.budget_bytes();
  v.used = residency_.used_bytes();
  for (const auto& m : parts_.served->All()) (m->model ? v.resident : v.failed).push_back(m->spec->id);
  v.loading.assign(loading_.begin(), loading_.end());
  v.counters = residency_.counters();
  v.load_failures = load_failures_.load();
  v.placement_rounds = placement_rounds_.load();
  return v;
}

void ResidentModels::Describe(queue::WorkerInfo* info) const {
  const auto now = SteadyClock::now();
  std::lock_guard lock(mu_);
  for (const auto& [id, spec] : wanted_) info->models.push_back(id);
  for (const auto& m : parts_.served->All()) {
    (m->model ? info->resident : info->failed).push_back(m->spec->id);
    info->queued += m->queued.load(std::memory_order_relaxed);
    info->in_flight += m->in_flight.load(std::memory_order_relaxed);
  }
  info->loading.assign(loading_.begin(), loading_.end());
  info->memory_budget = residency_.budget_bytes();
  info->memory_used = residency_.used_bytes();
  info->memory_pinned = residency_.pinned_bytes();
  for (const auto& m : residency_.Models()) {
    if (m.pinned) info->pinned.push_back(m.id);
    if (residency_.Thrashing(m.id, now)) info->thrashing.push_back(m.id);
  }
  info->loads = residency_.counters().loads;
  info->evictions = residency_.counters().evictions;
}

}  // namespace shoal::worker
