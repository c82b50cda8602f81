#include "gateway/queue_dispatcher.h"

#include <algorithm>

#include "common/log.h"
#include "gateway/responses.h"
#include "gateway/results.h"
#include "queue/subjects.h"

namespace shoal::gateway {

namespace {

bool AnyHedged(const PendingRequest& p) {
  for (const ItemResult& r : p.results) {
    if (r.hedges > 0) return true;
  }
  return false;
}

}  // namespace

QueueDispatcher::QueueDispatcher(const LaneSetup& lane, PayloadOffloader* offloader)
    : loop_(lane.loop),
      offloader_(offloader),
      workers_(lane.workers),
      table_(lane.table),
      channel_(lane.loop, lane.lane_id, lane.table),
      waiting_(lane.table, lane.no_capacity_wait),
      hedge_after_(lane.hedge_after),
      stalled_pools_(lane.stalled_pools),
      hedged_items_(lane.hedged_items) {}

QueueDispatcher::~QueueDispatcher() = default;

Status QueueDispatcher::Start(const queue::ConnectOptions& nats) {
  return channel_.Start(
      nats, [this](PendingRequest& p, size_t item, const queue::Message& msg) { OnPublishAck(p, item, msg); },
      [this](PendingRequest& p, const wire::ReplyHeader& h, std::string_view body, queue::Message msg) {
        // A failed output fails a generation; its other outputs (n > 1)
        // would only generate for nobody.
        const bool others_run = p.generation && h.error != Code::kOk && p.request.items.size() > 1;
        const auto now = SteadyClock::now();
        if (stalled_pools_) last_answer_[p.model->id] = now;  // hedging's (HedgeItems)
        NoteAnswered(h.worker, now);
        if (!ApplyReply(*table_, p, h, body, std::move(msg))) return;
        // Answered through hedging: the stream's copies, delivered after its
        // election, are dropped unrun.
        if (others_run || (p.finished && AnyHedged(p))) Cancel(p);
      });
}

void QueueDispatcher::NoteAnswered(std::string_view worker, SteadyClock::time_point now) {
  if (workers_ == nullptr || worker.empty()) return;
  if (told_answered_.size() > 4096) {  // workers come and go (new ids): forget the long quiet
    std::erase_if(told_answered_, [&](const auto& e) { return now - e.second > std::chrono::minutes(1); });
  }
  if (auto it = told_answered_.find(worker); it == told_answered_.end()) {
    told_answered_.emplace(std::string(worker), now);
  } else if (now - it->second < std::chrono::milliseconds(250)) {
    return;
  } else {
    it->second = now;
  }
  workers_->Answered(worker, now);
}

int64_t QueueDispatcher::MaxPayload() const { return channel_.MaxPayload(); }

void QueueDispatcher::Stop() {
  waiting_.RefuseAll();
  channel_.Stop();
}

void QueueDispatcher::Cancel(const PendingRequest& p) {
  if (channel_.connected()) channel_.PublishCancel(p);
}

bool QueueDispatcher::HasCapacity(std::string_view model_id) const {
  return workers_->AnyServing(model_id);
}

void QueueDispatcher::Submit(const std::shared_ptr<PendingRequest>& p) {
  if (!channel_.connected()) {  // stopped: the gateway is going away
    table_->Finish(*p, http::ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), p->id));
    return;
  }
  if (offloader_ && offloader_->Needs(*p)) {
    offloader_->Offload(p, loop_, [this, p](Status s) {
      if (!s.ok()) return (void)table_->Finish(*p, http::ErrorResponse(s, p->id));
      p->offloaded_at = SteadyClock::now();
      Queue(p);
    });
    return;
  }
  Queue(p);
}

void QueueDispatcher::Queue(const std::shared_ptr<PendingRequest>& p) {
  if (!channel_.connected()) {  // stopped while its payloads were uploading
    table_->Finish(*p, http::ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), p->id));
    return;
  }
  if (HasCapacity(p->model->id)) return Publish(*p);
  p->waited_from = SteadyClock::now();
  waiting_.Add(p);
}

void QueueDispatcher::Tick(SteadyClock::time_point now) {
  if (now >= next_republish_check_ && channel_.connected()) {
    next_republish_check_ = now + std::chrono::milliseconds(250);
    const uint64_t r = channel_.Reconnects();
    const auto all = table_->All();
    Republish(all, now, r != reconnects_seen_);
    Hedge(all, now);
    reconnects_seen_ = r;
  }
  waiting_.Tick(now, [this](PendingRequest& p) {
    if (!HasCapacity(p.model->id)) return false;
    Publish(p);
    return true;
  });
}

void QueueDispatcher::Republish(const std::vector<std::shared_ptr<PendingRequest>>& all,
                                SteadyClock::time_point now, bool reconnected) {
  constexpr auto kStoreTimeout = std::chrono::seconds(1);
  size_t requests = 0, items = 0;
  for (const auto& p : all) {
    if (!p->published || p->finished || p->generation) continue;
    std::vector<size_t> unanswered;
    for (size_t i = 0; i < p->results.size(); ++i) {
      ItemResult& r = p->results[i];
      if (r.filled || !(reconnected || (!r.stored && now - r.published_at >= kStoreTimeout))) continue;
      r.published_at = now;
      if (r.stored) r.unstored_since = now;
      r.stored = false;  // until this publish is acknowledged
      unanswered.push_back(i);
    }
    if (unanswered.empty()) continue;
    const ModelSpec& spec = *p->model;
    if (Status s = channel_.PublishItems(*p, queue::WorkSubject(spec.pool, spec.id, p->priority), true,
                                         &unanswered); !s.ok()) {
      table_->Finish(*p, http::ErrorResponse(s, p->id));
      continue;
    }
    ++requests;
    items += unanswered.size();
  }
  if (items == 0) return;
  spdlog::warn("gateway lane {}: published again {} item(s) of {} request(s) ({})", channel_.lane_id(), items,
               requests, reconnected ? "NATS reconnected; their results may be lost" : "not stored by JetStream in 1 s");
}

void QueueDispatcher::Hedge(const std::vector<std::shared_ptr<PendingRequest>>& all, SteadyClock::time_point now) {
  if (stalled_pools_ == nullptr || workers_ == nullptr || all.empty()) return;
  for (const auto& p : all) {
    if (!p->published || p->finished) continue;
    for (const ItemResult& r : p->results) {
      if (!r.filled && !r.stored && now - r.unstored_since >= hedge_after_) {
        if (stalled_pools_->Mark(p->model->pool)) {
          spdlog::warn("gateway lane {}: the work stream of pool '{}' stored nothing for {} ms (between leaders?); "
                       "its items go straight to workers as well until it stores again",
                       channel_.lane_id(), p->model->pool, hedge_after_.count());
        }
        break;
      }
    }
  }
  for (const auto& p : all) HedgeItems(*p, now);
  if (hedged_since_log_ > 0 && now >= next_hedge_log_) {
    spdlog::warn("gateway lane {}: {} cop(ies) of items sent straight to workers in the last second ({} of stored "
                 "but undelivered ones, for idle workers only)",
                 channel_.lane_id(), hedged_since_log_, idle_copies_since_log_);
    hedged_since_log_ = idle_copies_since_log_ = 0;
    next_hedge_log_ = now + std::chrono::seconds(1);
  }
}

void QueueDispatcher::HedgeItems(PendingRequest& p, SteadyClock::time_point now) {
  if (!p.published || p.finished || p.generation || p.priority != queue::Priority::kInteractive) return;
  const bool stalled = stalled_pools_->Contains(p.model->pool);
  // Nothing of its model answered here lately: a stored item may be waiting
  // on a consumer that delivers nothing (or on busy workers, which drop a
  // copy for idle hands).
  const auto answered = last_answer_.find(p.model->id);
  const bool undelivered = answered == last_answer_.end() || now - answered->second >= hedge_after_;
  if (!stalled && !undelivered) return;
  // A copy for idle hands may find none where it went (busy, or cut off
  // while still in the registry): the next worker gets the next one.
  constexpr uint32_t kIdleCopies = 3;
  std::vector<size_t> anywhere, idle;
  for (size_t i = 0; i < p.results.size(); ++i) {
    const ItemResult& r = p.results[i];
    if (r.filled) continue;
    if (stalled && r.hedges == 0) {
      anywhere.push_back(i);
    } else if (undelivered && r.stored && now - r.published_at >= hedge_after_ && r.hedges < kIdleCopies &&
               now - r.hedged_at >= hedge_after_) {
      idle.push_back(i);
    }
  }
  SendCopies(p, anywhere, /*if_idle=*/false, now);
  SendCopies(p, idle, /*if_idle=*/true, now);
}

void QueueDispatcher::SendCopies(PendingRequest& p, const std::vector<size_t>& items, bool if_idle,
                                 SteadyClock::time_point now) {
  if (items.empty()) return;
  const std::string worker = HedgeTarget(*p.model, now);
  if (worker.empty()) return;
  const std::string subject = queue::HedgeSubject(worker, p.model->id, if_idle);
  if (!channel_.PublishItems(p, subject, /*jetstream_ack=*/false, &items).ok()) return;  // the stream's copy still runs
  for (size_t i : items) {
    ++p.results[i].hedges;
    p.results[i].hedged_at = now;
  }
  hedged_since_log_ += items.size();
  if (if_idle) idle_copies_since_log_ += items.size();
  if (hedged_items_) hedged_items_->Inc(static_cast<double>(items.size()));
}

std::string QueueDispatcher::HedgeTarget(const ModelSpec& spec, SteadyClock::time_point now) {
  if (now - live_at_ >= std::chrono::milliseconds(250)) {  // a tick's worth: hedging may ask per item
    live_ = workers_->Live();
    live_at_ = now;
  }
  std::vector<const std::string*> loaded;
  for (const queue::WorkerInfo& w : live_) {
    if (w.pool == spec.pool && std::find(w.resident.begin(), w.resident.end(), spec.id) != w.resident.end()) {
      loaded.push_back(&w.id);
    }
  }
  if (loaded.empty()) return {};
  return *loaded[next_hedge_target_++ % loaded.size()];
}

void QueueDispatcher::Publish(PendingRequest& p) {
  p.published = true;
  const auto now = SteadyClock::now();
  p.published_at = now;
  for (ItemResult& r : p.results) r.published_at = r.unstored_since = now;
  const ModelSpec& spec = *p.model;
  spdlog::debug("rid={} queued items={} pool={} model={}", p.id, p.results.size(), spec.pool, spec.id);
  if (Status s = channel_.PublishItems(p, queue::WorkSubject(spec.pool, spec.id, p.priority), /*jetstream_ack=*/true);
      !s.ok()) {
    // Items already published may still run; their results will be ignored.
    table_->Finish(p, http::ErrorResponse(s, p.id));
    return;
  }
  if (stalled_pools_ && stalled_pools_->Contains(spec.pool) && workers_ != nullptr) {
    HedgeItems(p, now);
  }
}

void QueueDispatcher::OnPublishAck(PendingRequest& p, size_t item, const queue::Message& msg) {
  const std::string_view body = msg.payload();
  // A status message carries no body. (A 503 "no responders" — no stream
  // leader took the publish — never gets here: cnats consumes it, and the
  // item, unstored, is published again and hedged.)
  if (body.empty()) return;
  if (body.find("\"error\"") == std::string_view::npos) {  // stored
    if (item < p.results.size()) p.results[item].stored = true;
    if (stalled_pools_ && stalled_pools_->Clear(p.model->pool)) {
      spdlog::info("gateway lane {}: the work stream of pool '{}' stores again", channel_.lane_id(), p.model->pool);
    }
    return;
  }
  // {"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}
  const bool full = body.find("maximum") != std::string_view::npos ||
                    body.find("resources") != std::string_view::npos;
  // Under overload this is every refused request: one line a second.
  ++rejected_since_log_;
  if (const auto now = SteadyClock::now(); now >= next_reject_log_) {
    spdlog::warn("gateway lane {}: {} publish(es) refused by JetStream in the last second, e.g. rid={}: {}",
                 channel_.lane_id(), rejected_since_log_, p.id, body);
    rejected_since_log_ = 0;
    next_reject_log_ = now + std::chrono::seconds(1);
  }
  table_->Finish(p, http::ErrorResponse(full ? Status(Code::kOverloaded, "the work queue is full")
                                       : Status(Code::kNoCapacity, "the work queue rejected the request"),
                                  p.id));
}

}  // namespace shoal::gateway
