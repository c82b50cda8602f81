#include "gateway/pending.h"

namespace shoal::gateway {

void PendingTable::Insert(const std::shared_ptr<PendingRequest>& p) {
  {
    Shard& s = ShardFor(p->seq);
    std::lock_guard lock(s.mu);
    s.map.emplace(p->seq, p);
  }
  size_.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<PendingRequest> PendingTable::Find(uint64_t seq) const {
  Shard& s = ShardFor(seq);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(seq);
  return it == s.map.end() ? nullptr : it->second;
}

void PendingTable::Erase(uint64_t seq) {
  Shard& s = ShardFor(seq);
  std::lock_guard lock(s.mu);
  if (s.map.erase(seq) > 0) size_.fetch_sub(1, std::memory_order_relaxed);
}

bool PendingTable::Finish(PendingRequest& p, HttpResponse response) {
  if (p.finished.exchange(true)) return false;
  Erase(p.seq);
  p.respond(std::move(response));
  return true;
}

std::vector<std::shared_ptr<PendingRequest>> PendingTable::Expired(SteadyClock::time_point now) {
  std::vector<std::shared_ptr<PendingRequest>> out;
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    for (const auto& [seq, p] : s.map) {
      if (p->deadline <= now) out.push_back(p);
    }
  }
  return out;
}

void PendingTable::Clear() {
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mu);
    s.map.clear();
  }
  size_ = 0;
}

}  // namespace shoal::gateway
