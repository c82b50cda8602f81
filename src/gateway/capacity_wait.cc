#include "gateway/capacity_wait.h"

namespace shoal::gateway {

void CapacityWait::Add(const std::shared_ptr<PendingRequest>& p) {
  waiting_.push_back({p, SteadyClock::now() + wait_});
}

void CapacityWait::Tick(SteadyClock::time_point now, const std::function<bool(PendingRequest&)>& dispatch) {
  if (waiting_.empty()) return;
  std::vector<Waiting> waiting;
  waiting.swap(waiting_);  // `dispatch` may finish a request, never add one
  for (Waiting& w : waiting) {
    PendingRequest& p = *w.request;
    if (p.finished || dispatch(p)) continue;
    if (now < w.give_up) {
      waiting_.push_back(std::move(w));
      continue;
    }
    table_->Finish(p, http::ErrorResponse(
                          Status(Code::kNoCapacity, "no worker is serving model '" + p.model->id + "'"), p.id));
  }
}

void CapacityWait::RefuseAll() {
  for (Waiting& w : waiting_) {
    table_->Finish(*w.request,
                   http::ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), w.request->id));
  }
  waiting_.clear();
}

}  // namespace shoal::gateway
