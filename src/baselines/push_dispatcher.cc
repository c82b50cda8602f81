#include "baselines/push_dispatcher.h"

#include "common/log.h"
#include "gateway/results.h"
#include "queue/subjects.h"

namespace shoal::baselines {

PushDispatcher::PushDispatcher(const gateway::LaneSetup& lane, PushDispatcherOptions options)
    : workers_(lane.workers),
      table_(lane.table),
      options_(options),
      channel_(lane.loop, lane.lane_id, lane.table),
      waiting_(lane.table, lane.no_capacity_wait) {}

PushDispatcher::~PushDispatcher() = default;

Status PushDispatcher::Start(const queue::ConnectOptions& nats) {
  // No publish acks: core NATS pushes ask for none.
  SHOAL_RETURN_IF_ERROR(channel_.Start(
      nats, {}, [this](PendingRequest& p, const wire::ReplyHeader& h, std::string_view body, queue::Message msg) {
        if (gateway::ApplyReply(*table_, p, h, body, std::move(msg))) OnApplied(p);
      }));
  RefreshView();
  return Status::Ok();
}

int64_t PushDispatcher::MaxPayload() const { return channel_.MaxPayload(); }

void PushDispatcher::Stop() {
  waiting_.RefuseAll();
  channel_.Stop();
}

void PushDispatcher::RefreshView() {
  view_.clear();
  for (const auto& w : workers_->Live()) {  // sorted by worker id
    for (const auto& m : w.models) view_[m].push_back(w.id);
  }
  next_refresh_ = SteadyClock::now() + options_.view_refresh;
}

void PushDispatcher::Cancel(const PendingRequest& p) {
  if (channel_.connected()) channel_.PublishCancel(p);
}

bool PushDispatcher::HasCapacity(std::string_view model_id) const {
  auto it = view_.find(model_id);
  return it != view_.end() && !it->second.empty();
}

std::string PushDispatcher::Pick(const std::string& model_id) {
  auto it = view_.find(model_id);
  if (it == view_.end() || it->second.empty()) return {};
  const auto& candidates = it->second;
  size_t& next = next_rr_[model_id];
  const size_t start = next % candidates.size();
  next = start + 1;
  if (options_.policy == PushPolicy::kRoundRobin) return candidates[start];
  // Least outstanding; ties go to the first from the round-robin position,
  // so an idle fleet still spreads its work.
  size_t best = start;
  int64_t best_load = outstanding_[candidates[start]];
  for (size_t k = 1; k < candidates.size(); ++k) {
    const size_t i = (start + k) % candidates.size();
    const int64_t load = outstanding_[candidates[i]];
    if (load < best_load) best = i, best_load = load;
  }
  return candidates[best];
}

void PushDispatcher::Submit(const std::shared_ptr<PendingRequest>& p) {
  if (!channel_.connected()) {  // stopped: the gateway is going away
    table_->Finish(*p, http::ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), p->id));
    return;
  }
  if (std::string worker = Pick(p->model->id); !worker.empty()) return Push(*p, worker);
  waiting_.Add(p);
}

void PushDispatcher::Push(PendingRequest& p, const std::string& worker_id) {
  const size_t n = p.request.items.size();
  assigned_[p.seq] = {worker_id, n};
  outstanding_[worker_id] += static_cast<int64_t>(n);
  if (Status s = channel_.PublishItems(p, queue::PushSubject(worker_id, p.model->id), /*jetstream_ack=*/false);
      !s.ok()) {
    // Items already pushed may still run; their results will be ignored.
    table_->Finish(p, http::ErrorResponse(s, p.id));
    if (auto it = assigned_.find(p.seq); it != assigned_.end()) Release(it);
  }
}

void PushDispatcher::OnApplied(PendingRequest& p) {
  auto it = assigned_.find(p.seq);
  if (it == assigned_.end()) return;
  if (p.finished) return Release(it);  // an error result, or the last one
  if (it->second.outstanding > 0) {
    --it->second.outstanding;
    --outstanding_[it->second.worker_id];
  }
}

void PushDispatcher::Release(std::unordered_map<uint64_t, Assigned>::iterator it) {
  outstanding_[it->second.worker_id] -= static_cast<int64_t>(it->second.outstanding);
  assigned_.erase(it);
}

void PushDispatcher::Tick(SteadyClock::time_point now) {
  if (now >= next_refresh_) RefreshView();
  // Requests finished without their results (deadline, shutdown) stop
  // counting against their worker. A late result finds no request and so
  // changes nothing (LaneChannel drops it).
  for (auto it = assigned_.begin(); it != assigned_.end();) {
    auto next = std::next(it);
    if (!table_->Find(it->first)) Release(it);
    it = next;
  }
  waiting_.Tick(now, [this](PendingRequest& p) {
    const std::string worker = Pick(p.model->id);
    if (worker.empty()) return false;
    Push(p, worker);
    return true;
  });
}

}  // namespace shoal::baselines
