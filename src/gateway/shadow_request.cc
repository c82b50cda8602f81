#include "gateway/shadow_request.h"

#include "common/log.h"

namespace shoal::gateway {

bool Shadows(const PendingRequest& p) {
  const Task task = p.request.task;
  return !p.generation && (task == Task::kEncode || task == Task::kScore || task == Task::kExtract);
}

void ShadowPair::Finished(const PendingRequest& p) {
  Answer& a = p.on_canary ? candidate_ : serving_;
  a.in = true;
  a.ok = p.status == 200;
  if (a.ok) {
    for (const ItemResult& r : p.results) a.items.emplace_back(r.payload);
  }
  if (!serving_.in || !candidate_.in || !serving_.ok || !candidate_.ok) return;
  auto compared = CompareAnswers(task_, {serving_.items.begin(), serving_.items.end()},
                                 {candidate_.items.begin(), candidate_.items.end()});
  if (!compared.ok()) {
    spdlog::warn("rid={} shadow of {} on version {}: not compared: {}", p.id, model_,
                 canary_.version, compared.status().ToString());
    return;
  }
  monitor_->RecordComparison(model_, canary_, *compared);
}

std::shared_ptr<PendingRequest> ShadowOf(PendingRequest& p,
                                         std::shared_ptr<const ModelSpec> candidate, uint64_t seq,
                                         std::string id, CanaryMonitor* monitor) {
  auto s = std::make_shared<PendingRequest>();
  s->seq = seq;
  s->id = std::move(id);
  s->model = std::move(candidate);
  s->request = p.request.Clone();
  // Its response is composed but never sent: encode and extract compose
  // cheapest as MessagePack (results spliced, nothing transcoded).
  const bool items_as_results = p.request.task == Task::kEncode || p.request.task == Task::kExtract;
  s->format = items_as_results ? ResponseFormat::kMsgpack : p.format;
  s->received = SteadyClock::now();
  s->priority = p.priority;
  s->deadline = p.deadline;
  s->deadline_unix_ms = p.deadline_unix_ms;
  s->results.resize(s->request.items.size());
  s->remaining = s->request.items.size();
  s->canary_of = p.canary_of;
  s->canary = p.canary;
  s->on_canary = true;
  p.shadow = s->shadow =
      std::make_shared<ShadowPair>(monitor, p.canary_of, p.canary, p.request.task);
  return s;
}

}  // namespace shoal::gateway
