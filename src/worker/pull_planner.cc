#include "worker/pull_planner.h"

#include <algorithm>
#include <cmath>

namespace shoal::worker {

PullPlan PlanPulls(const std::vector<ModelPullState>& models, int idle_executors) {
  PullPlan plan;
  plan.want.assign(models.size(), 0);
  plan.probe.assign(models.size(), false);
  std::vector<int64_t>& want = plan.want;
  int free = idle_executors;
  for (const ModelPullState& m : models) {
    if (m.queued >= m.batch) --free;  // a full batch here takes an executor
  }
  if (free <= 0) return plan;

  // Probe what it has not heard of lately, and choose once the answers are in.
  bool waiting_for_answers = false;
  for (size_t i = 0; i < models.size(); ++i) {
    const ModelPullState& m = models[i];
    if (m.queued > 0) continue;  // a candidate anyway
    if (!m.known && !m.probing) plan.probe[i] = true;
    waiting_for_answers = waiting_for_answers || plan.probe[i] || m.probing;
  }
  if (waiting_for_answers) return plan;

  // Candidates for a batch: something to run, and not already a full batch
  // here; interactive ones first, then by score: how long its work may have
  // waited × √(items in its batch).
  // The root leans toward fuller batches (throughput) without letting a hot
  // model's backlog outrank a cold model's wait for long (latency).
  std::vector<size_t> order;
  std::vector<double> score(models.size(), 0);
  for (size_t i = 0; i < models.size(); ++i) {
    const ModelPullState& m = models[i];
    const int64_t waiting = std::min(m.queued + m.backlog, m.batch);
    if (m.queued >= m.batch || waiting <= 0) continue;
    const double age_ms = std::chrono::duration<double, std::milli>(m.since_batch).count() + 1;
    score[i] = age_ms * std::sqrt(static_cast<double>(waiting));
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (models[a].batch_class != models[b].batch_class) return models[b].batch_class;
    return score[a] > score[b];
  });
  for (size_t k = 0; k < order.size() && free > 0; ++k, --free) {
    const ModelPullState& m = models[order[k]];
    want[order[k]] = m.batch - m.queued;
  }
  if (free <= 0) return plan;  // every executor is spoken for
  for (size_t i = 0; i < models.size(); ++i) {
    if (want[i] == 0 && models[i].queued == 0) want[i] = 1;  // doorbell
  }
  return plan;
}

int64_t PredictedBatchItems(uint32_t max_batch_requests, uint32_t max_batch_tokens,
                            double mean_item_cost) {
  int64_t n = std::max<uint32_t>(1, max_batch_requests);
  if (mean_item_cost > 0) {
    n = std::min<int64_t>(n, static_cast<int64_t>(std::floor(max_batch_tokens / mean_item_cost)));
  }
  return std::max<int64_t>(1, n);
}

}  // namespace shoal::worker
