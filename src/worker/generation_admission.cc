// The generation engine's line (generation_engine.h): which waiting
// sequences start, in what order, and who steps aside — for KV room, or a
// batch-class sequence for an interactive one (queue/priority.h).
#include <algorithm>

#include "worker/generation_engine.h"
#include "worker/generation_sequence.h"
#include "worker/priority_line.h"

namespace shoal::worker {

bool GenerationEngine::AwaitsSharedPrefix(const Sequence& s) const {
  const uint32_t block = blocks_.block_tokens();
  // The blocks it could adopt (at least one token is always its own).
  const size_t wanted = (s.tokens.size() - 1) / block * block;
  for (const auto& r : running_) {
    if (r->prefix_key != s.prefix_key || r->computed >= wanted) continue;
    const size_t n = std::min(wanted, r->tokens.size());
    if (n < block || !std::equal(s.tokens.begin(), s.tokens.begin() + block, r->tokens.begin())) continue;
    const size_t shared = std::mismatch(s.tokens.begin(), s.tokens.begin() + n, r->tokens.begin()).first -
                          s.tokens.begin();
    if (shared / block * block > r->computed) return true;  // it is computing blocks this one would recompute
  }
  return false;
}

void GenerationEngine::Admit() {
  std::vector<std::unique_ptr<Sequence>> deferred;  // waiting for a shared prefix, in line order
  auto requeue_deferred = [&] {
    std::lock_guard lock(mu_);
    for (auto it = deferred.rbegin(); it != deferred.rend(); ++it) waiting_.push_front(std::move(*it));
  };
  for (;;) {
    if (running_.size() >= max_running_) {
      // Full: only interactive work gets in, in place of batch-class work.
      bool interactive_waits = false;
      {
        std::lock_guard lock(mu_);
        interactive_waits = !waiting_.empty() && waiting_.front()->item.priority == queue::Priority::kInteractive;
      }
      if (!interactive_waits || !YieldToInteractive()) break;
    }
    std::unique_ptr<Sequence> s;
    {
      std::lock_guard lock(mu_);
      if (waiting_.empty()) break;
      s = std::move(waiting_.front());
      waiting_.pop_front();
    }
    if (!s->prepared && !Prepare(*s)) continue;
    if (AwaitsSharedPrefix(*s)) {
      deferred.push_back(std::move(s));
      continue;
    }
    // Room for everything it has (its prompt, and after a preemption what
    // it generated) plus the next position — a shared prefix comes cached —
    // while a block per running sequence stays free: each may need one at
    // the next step, and the newcomer would be preempted at once for it.
    const uint32_t adopted = blocks_.AdoptPrefix(s->tokens, s->prefix_key, &s->table);
    if (!blocks_.Grow(&s->table, static_cast<uint32_t>(s->tokens.size()) + 1) ||
        blocks_.available() < running_.size()) {
      blocks_.Release(&s->table);
      const bool retry = s->item.priority == queue::Priority::kInteractive && YieldToInteractive();
      {
        std::lock_guard lock(mu_);
        waiting_.push_front(std::move(s));  // first in line when blocks free up
      }
      if (retry) continue;  // with the blocks a batch-class sequence gave back
      break;
    }
    s->computed = adopted;
    s->published = adopted / blocks_.block_tokens();
    if (!s->admitted_once) {
      s->admitted_once = true;
      s->cached_prompt = adopted;
      s->started = SteadyClock::now();
      s->started_unix_us = UnixMicros();
      model_->items_run.fetch_add(1, std::memory_order_relaxed);
    }
    s->item.ticket.Start();
    {
      std::lock_guard lock(mu_);
      stats_.prefix_hit_blocks += adopted / blocks_.block_tokens();
    }
    running_.push_back(std::move(s));
  }
  requeue_deferred();
}

void GenerationEngine::Preempt(size_t index) {
  std::unique_ptr<Sequence> s = std::move(running_[index]);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
  blocks_.Release(&s->table);
  if (drafter_) drafter_->Release(&s->draft);
  s->computed = 0;
  s->published = 0;
  s->item.ticket.Requeue();
  std::lock_guard lock(mu_);
  ++stats_.preemptions;
  const auto at = PlaceInLine(waiting_, s->item.priority, /*head=*/true, PriorityOf);
  waiting_.insert(at, std::move(s));
  MirrorLocked();
}

bool GenerationEngine::YieldToInteractive() {
  for (size_t i = running_.size(); i-- > 0;) {
    if (running_[i]->item.priority == queue::Priority::kBatch) {
      Preempt(i);
      return true;
    }
  }
  return false;
}

void GenerationEngine::MirrorLocked() {
  stats_.running = static_cast<int64_t>(running_.size());
  running_batch_ = std::count_if(running_.begin(), running_.end(),
                                 [](const auto& r) { return r->item.priority == queue::Priority::kBatch; });
  stats_.kv_blocks_free = blocks_.available();
}

}  // namespace shoal::worker
