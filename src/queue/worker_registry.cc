#include "queue/worker_registry.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/log.h"

namespace shoal::queue {

std::string WorkerInfo::ToJson() const {
  nlohmann::json o = {{"id", id},           {"host", host},       {"pid", pid},
                      {"pool", pool},       {"models", models},   {"executors", executors},
                      {"queued", queued},   {"in_flight", in_flight}, {"batches", batches},
                      {"batch_items", batch_items}, {"ts_ms", ts_ms}};
  o["memory"] = {{"budget", memory_budget}, {"used", memory_used}, {"pinned", memory_pinned}};
  o["resident"] = resident;
  o["pinned"] = pinned;
  o["loading"] = loading;
  o["failed"] = failed;
  o["thrashing"] = thrashing;
  o["loads"] = loads;
  o["evictions"] = evictions;
  return o.dump();
}

Result<WorkerInfo> WorkerInfo::Parse(std::string_view json) {
  try {
    auto o = nlohmann::json::parse(json);
    WorkerInfo w;
    w.id = o.at("id").get<std::string>();
    w.host = o.value("host", "");
    w.pid = o.value("pid", 0);
    w.pool = o.value("pool", "");
    w.models = o.value("models", std::vector<std::string>{});
    w.executors = o.value("executors", 0);
    w.queued = o.value("queued", uint64_t{0});
    w.in_flight = o.value("in_flight", uint64_t{0});
    w.batches = o.value("batches", uint64_t{0});
    w.batch_items = o.value("batch_items", uint64_t{0});
    w.ts_ms = o.value("ts_ms", int64_t{0});
    if (auto m = o.find("memory"); m != o.end() && m->is_object()) {
      w.memory_budget = m->value("budget", uint64_t{0});
      w.memory_used = m->value("used", uint64_t{0});
      w.memory_pinned = m->value("pinned", uint64_t{0});
    }
    using Ids = std::vector<std::string>;
    w.resident = o.value("resident", Ids{});
    w.pinned = o.value("pinned", Ids{});
    w.loading = o.value("loading", Ids{});
    w.failed = o.value("failed", Ids{});
    w.thrashing = o.value("thrashing", Ids{});
    w.loads = o.value("loads", uint64_t{0});
    w.evictions = o.value("evictions", uint64_t{0});
    return w;
  } catch (const nlohmann::json::exception& e) {
    return Internal(std::string("bad heartbeat: ") + e.what());
  }
}

Status PutHeartbeat(kvStore* workers, const WorkerInfo& info) {
  const std::string json = info.ToJson();
  uint64_t rev = 0;
  return FromNats(
      kvStore_Put(&rev, workers, info.id.c_str(), json.data(), static_cast<int>(json.size())),
      "heartbeat");
}

Result<std::vector<WorkerInfo>> ReadHeartbeats(kvStore* workers, std::chrono::milliseconds fresh) {
  std::vector<WorkerInfo> out;
  kvKeysList keys;
  const natsStatus s = kvStore_Keys(&keys, workers, nullptr);
  if (s == NATS_NOT_FOUND) return out;
  if (s != NATS_OK) return FromNats(s, "heartbeat keys");
  const int64_t now_ms = UnixMillis();
  for (int i = 0; i < keys.Count; ++i) {
    kvEntry* e = nullptr;
    if (kvStore_Get(&e, workers, keys.Keys[i]) != NATS_OK) continue;
    auto info = WorkerInfo::Parse(std::string_view(kvEntry_ValueString(e), kvEntry_ValueLen(e)));
    kvEntry_Destroy(e);
    if (info.ok() && now_ms - info->ts_ms <= fresh.count()) out.push_back(std::move(info).value());
  }
  kvKeysList_Destroy(&keys);
  return out;
}

Status DeleteHeartbeat(kvStore* workers, std::string_view worker_id) {
  return FromNats(kvStore_Delete(workers, std::string(worker_id).c_str()), "heartbeat delete");
}

Result<std::unique_ptr<WorkerRegistry>> WorkerRegistry::Open(kvStore* workers,
                                                             std::chrono::milliseconds stale_after,
                                                             std::chrono::milliseconds silence_grace) {
  std::unique_ptr<WorkerRegistry> r(new WorkerRegistry());
  r->stale_after_ = stale_after;
  r->silence_grace_ = silence_grace;
  WorkerRegistry* self = r.get();
  // Every live worker writes each second: silence beyond a few means a
  // broken watch (kv_watch.h) as likely as a fleet gone.
  auto watch = KvWatch::Start(workers, [self](const KvChange& c) { self->Apply(c); }, nullptr, 3 * kHeartbeatInterval);
  if (!watch.ok()) return watch.status();
  r->watch_ = std::move(watch).value();
  return r;
}

void WorkerRegistry::Apply(const KvChange& change) {
  std::lock_guard lock(mu_);
  if (change.deleted) {
    workers_.erase(change.key);
    return;
  }
  auto info = WorkerInfo::Parse(change.value);
  if (!info.ok()) {
    spdlog::warn("workers: ignoring entry '{}': {}", change.key, info.status().message());
    return;
  }
  // An entry replayed at watch start may be old: date it by its own stamp.
  const int64_t age_ms = std::max<int64_t>(0, UnixMillis() - info->ts_ms);
  const auto at = SteadyClock::now() - std::chrono::milliseconds(age_ms);
  latest_ = std::max(latest_, at);
  workers_[change.key] = {std::move(info).value(), at};
}

bool WorkerRegistry::IsLive(SteadyClock::time_point heard, SteadyClock::time_point latest, SteadyClock::time_point now,
                            std::chrono::milliseconds stale_after, std::chrono::milliseconds silence_grace,
                            bool blind) {
  const auto silence = now - latest;
  const bool bucket_silent = silence >= stale_after && (silence < stale_after + silence_grace || blind);
  return (bucket_silent ? latest : now) - heard < stale_after;
}

void WorkerRegistry::Answered(std::string_view worker_id, SteadyClock::time_point at) {
  std::lock_guard lock(mu_);
  auto it = workers_.find(std::string(worker_id));
  if (it != workers_.end()) it->second.at = std::max(it->second.at, at);
}

bool WorkerRegistry::AnyServing(std::string_view model_id) const {
  const auto now = SteadyClock::now();
  std::lock_guard lock(mu_);
  for (const auto& [id, seen] : workers_) {
    if (!IsLive(seen, now)) continue;
    for (const auto& m : seen.info.models) {
      if (m == model_id) return true;
    }
  }
  return false;
}

std::vector<WorkerInfo> WorkerRegistry::Live() const {
  const auto now = SteadyClock::now();
  std::lock_guard lock(mu_);
  std::vector<WorkerInfo> out;
  for (const auto& [id, seen] : workers_) {
    if (IsLive(seen, now)) out.push_back(seen.info);
  }
  return out;
}

}  // namespace shoal::queue
