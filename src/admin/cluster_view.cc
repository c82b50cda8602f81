#include "admin/cluster_view.h"

#include <algorithm>
#include <map>

#include "common/clock.h"
#include "queue/topology.h"

namespace shoal::admin {
namespace {

using nlohmann::json;

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

json WorkerJson(const queue::WorkerInfo& w, int64_t now_ms) {
  return {{"id", w.id},
          {"host", w.host},
          {"pid", w.pid},
          {"pool", w.pool},
          {"executors", w.executors},
          {"memory", {{"budget", w.memory_budget}, {"used", w.memory_used}, {"pinned", w.memory_pinned}}},
          {"resident", w.resident},
          {"pinned", w.pinned},
          {"loading", w.loading},
          {"failed", w.failed},
          {"thrashing", w.thrashing},
          {"loads", w.loads},
          {"evictions", w.evictions},
          {"queued", w.queued},
          {"in_flight", w.in_flight},
          {"batches", w.batches},
          {"batch_items", w.batch_items},
          {"heartbeat_age_ms", std::max<int64_t>(0, now_ms - w.ts_ms)}};
}

}  // namespace

json ClusterView(const queue::CatalogSnapshot& catalog, const std::vector<queue::WorkerInfo>& workers, jsCtx* js,
                 const std::vector<queue::BatchRecord>& jobs) {
  const int64_t now_ms = UnixMillis();
  json out = {{"workers", json::array()}, {"models", json::array()}};
  std::vector<queue::WorkerInfo> sorted = workers;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  for (const auto& w : sorted) out["workers"].push_back(WorkerJson(w, now_ms));

  std::map<std::string, Result<std::map<std::string, queue::WorkMessages>>> waiting_by_pool;
  for (const auto& [id, spec] : catalog) {
    if (!waiting_by_pool.count(spec->pool)) {
      waiting_by_pool.emplace(spec->pool, queue::WorkMessagesByModel(js, spec->pool));
    }
    const auto& waiting = waiting_by_pool.at(spec->pool);
    json m = {{"id", id},
              {"pool", spec->pool},
              {"runtime", spec->runtime},
              {"task", std::string(TaskName(spec->task))},
              {"pinned", spec->pinned},
              {"memory_bytes", spec->memory_bytes},
              {"waiting", nullptr},
              {"waiting_batch", nullptr},
              {"resident_on", json::array()},
              {"loading_on", json::array()},
              {"failed_on", json::array()}};
    if (waiting.ok()) {
      auto it = waiting->find(id);
      const queue::WorkMessages n = it == waiting->end() ? queue::WorkMessages{} : it->second;
      m["waiting"] = n.total();
      m["waiting_batch"] = n.batch;
    }
    for (const auto& w : sorted) {
      if (Has(w.resident, id)) m["resident_on"].push_back(w.id);
      if (Has(w.loading, id)) m["loading_on"].push_back(w.id);
      if (Has(w.failed, id)) m["failed_on"].push_back(w.id);
    }
    out["models"].push_back(std::move(m));
  }
  out["batch_jobs"] = json::array();
  for (const queue::BatchRecord& j : jobs) {
    if (queue::Finished(j.status)) continue;
    out["batch_jobs"].push_back({{"id", j.id},
                                 {"status", queue::BatchStatusName(j.status)},
                                 {"endpoint", j.endpoint},
                                 {"owner", j.owner},
                                 {"total", j.total},
                                 {"completed", j.completed},
                                 {"failed", j.failed},
                                 {"created_at", j.created_at},
                                 {"expires_at", j.expires_at},
                                 {"runner", j.runner}});
  }
  return out;
}

}  // namespace shoal::admin
