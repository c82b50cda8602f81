#include "gateway/pending.h"

namespace shoal::gateway {

void PendingTable::Insert(const std::shared_ptr<PendingRequest>& p) {
  map_.emplace(p->seq, p);
  size_.store(map_.size(), std::memory_order_relaxed);
}

std::shared_ptr<PendingRequest> PendingTable::Find(uint64_t seq) const {
  auto it = map_.find(seq);
  return it == map_.end() ? nullptr : it->second;
}

bool PendingTable::Finish(PendingRequest& p, http::Response response) {
  if (p.finished) return false;
  p.finished = true;
  map_.erase(p.seq);
  size_.store(map_.size(), std::memory_order_relaxed);
  if (p.streaming && response.status >= 400) {
    // Too late for a status line: the error becomes the stream's last event.
    std::string event;
    http::AppendSseData(response.body, &event);
    response.body = std::move(event);
  }
  response.more = false;
  p.status = response.status;
  p.respond(std::move(response));
  if (on_finish_) on_finish_(p);
  for (ItemResult& r : p.results) {
    r.payload = {};
    reaper_.Add(r.message.release());
  }
  return true;
}

void PendingTable::Send(PendingRequest& p, http::Response part) {
  if (p.finished) return;
  p.streaming = true;
  part.more = true;
  p.respond(std::move(part));
}

std::vector<std::shared_ptr<PendingRequest>> PendingTable::Expired(SteadyClock::time_point now) const {
  std::vector<std::shared_ptr<PendingRequest>> out;
  for (const auto& [seq, p] : map_) {
    if (p->deadline <= now) out.push_back(p);
  }
  return out;
}

}  // namespace shoal::gateway
