#include "worker/intake.h"

#include <algorithm>

#include "common/log.h"
#include "queue/loop_connection.h"
#include "queue/subjects.h"
#include "worker/generation_engine.h"

namespace shoal::worker {

Intake::Intake(Options options, Parts parts)
    : options_(std::move(options)),
      parts_(parts),
      pull_(
          "_SHOAL.pull." + options_.worker_id,
          [this](const queue::PullSubscriber::Delivery& d, queue::Message msg) { OnDelivered(d, std::move(msg)); },
          options_.pull, [this](int) { Plan(); }) {}

Intake::~Intake() { Close(); }

Status Intake::Connect() {
  loop_.Start();
  queue::ConnectOptions nats = options_.nats;
  nats.name = "shoal-worker-data " + options_.worker_id;
  auto nc = queue::ConnectOnLoop(nats, &loop_, [this] { OnReadable(); });
  if (!nc.ok()) return nc.status();
  nc_ = std::move(nc).value();
  return Status::Ok();
}

Status Intake::Start(BatchRunner* runner) {
  runner_ = runner;
  SHOAL_RETURN_IF_ERROR(pull_.Start(nc_.get(), &loop_));
  SHOAL_RETURN_IF_ERROR(Subscribe(queue::CancelSubject(options_.pool), [this](queue::Message m) {
    if (!parts_.cancelled->AddNotice(m.payload(), UnixMillis())) spdlog::warn("worker: malformed cancellation ignored");
    parts_.reaper->Add(m.release());
  }));
  return Subscribe(queue::HedgeWildcard(options_.worker_id), [this](queue::Message m) {
    auto copy = queue::ParseHedgeSubject(m.subject());
    if (!copy.ok() || (copy->if_idle && !TakesIdleCopy(copy->model_id))) return parts_.reaper->Add(m.release());
    Accept(copy->model_id, std::move(m), ItemSource::kHedged);
  });
}

bool Intake::TakesIdleCopy(std::string_view model_id) {
  std::shared_ptr<ServedModel> served = parts_.served->Find(model_id);
  if (!served) return false;
  ServedModel& m = *served;
  const auto ns = [](int64_t t) { return SteadyClock::time_point(SteadyClock::duration(t)); };
  const auto delivered = ns(m.last_delivery_ns.load(std::memory_order_relaxed));
  const auto now = SteadyClock::now();
  if (now - delivered < options_.pull.starved_after) return false;  // the stream feeds it
  // Since the stream went quiet, either copies already run here (take the
  // rest of their burst too), or none of the model's work does.
  const bool taking_copies = ns(m.last_copy_ns) > delivered;
  const bool working = m.queued.load(std::memory_order_relaxed) > 0 || m.in_flight.load(std::memory_order_relaxed) > 0;
  if (working && !taking_copies) return false;
  m.last_copy_ns = now.time_since_epoch().count();
  return true;
}

Status Intake::Subscribe(const std::string& subject, std::function<void(queue::Message)> handler) {
  Status status;
  loop_.RunAndWait([&] {  // subscriptions_ is the loop's alone
    natsSubscription* sub = nullptr;
    status = queue::FromNats(natsConnection_SubscribeSync(&sub, nc_.get(), subject.c_str()), subject);
    if (!status.ok()) return;
    natsSubscription_SetPendingLimits(sub, -1, -1);
    subscriptions_.push_back({queue::SubscriptionPtr(sub), std::move(handler)});
  });
  return status;
}

void Intake::OnReadable() {
  pull_.Drain();
  for (Subscription& s : subscriptions_) queue::DrainSubscription(s.sub.get(), s.handler);
}

void Intake::OnDelivered(const queue::PullSubscriber::Delivery& d, queue::Message msg) {
  std::shared_ptr<ServedModel> served = parts_.served->BySlot(d.slot);
  WorkItem item;
  const Status s = ParseWorkItem(std::move(msg), served, d, &item);
  if (served && d.slot == served->batch_slot) item.priority = queue::Priority::kBatch;
  if (!served || served->retired) {
    if (!item.ack.empty()) runner_->Settle(item, Outcome::kNotServedHere);
    return parts_.reaper->Add(item.msg.release());
  }
  if (!s.ok()) {
    // Nobody to answer: terminate it so it does not circle forever.
    spdlog::warn("worker: malformed work message terminated: {}", s.message());
    if (!item.ack.empty()) (void)queue::Publish(nc_.get(), std::string(item.ack), "+TERM");
    return parts_.reaper->Add(item.msg.release());
  }
  const double mean = served->mean_item_cost.load(std::memory_order_relaxed);
  served->mean_item_cost.store(mean == 0 ? item.work.cost : 0.9 * mean + 0.1 * item.work.cost,
                               std::memory_order_relaxed);
  served->last_delivery_ns.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  Queue(std::move(item));
  Plan();
}

bool Intake::Accept(std::string_view model_id, queue::Message msg, ItemSource source) {
  std::shared_ptr<ServedModel> served = parts_.served->Find(model_id);
  WorkItem item;
  if (Status s = ParsePushedItem(std::move(msg), served, &item, source); !s.ok()) {
    spdlog::warn("worker: malformed message dropped: {}", s.message());
    parts_.reaper->Add(item.msg.release());
    return false;  // nobody to answer
  }
  if (!served || served->retired) {
    // The sender's view of this worker is stale (or wrong): say so at once
    // (pushed), or leave the item to the stream (hedged: Settle drops it).
    runner_->Settle(item, Outcome::kNotServedHere);
    parts_.reaper->Add(item.msg.release());
    return false;
  }
  Queue(std::move(item));
  return true;
}

void Intake::Queue(WorkItem item) {
  std::optional<Gate::Holder> hold = parts_.items->TryEnter();
  if (!hold) {  // draining: back to the stream (or, pushed, answered)
    runner_->Settle(item, Outcome::kShuttingDown);
    return parts_.reaper->Add(item.msg.release());
  }
  ServedModel& model = *item.model;
  item.ticket = ItemTicket(&model, std::move(*hold), item.priority == queue::Priority::kBatch);
  if (model.engine && item.work.task == Task::kGenerate) {  // tokenize runs on the executors
    model.engine->Push(std::move(item));
  } else {
    parts_.queue->Push(std::move(item));
  }
}

// Plans run on the loop: their pull requests then leave in the loop's next
// write (published from another thread they could wait for one), and one
// thread plans at a time.
void Intake::PostPlan() {
  loop_.Post([this] { Plan(); });
}

void Intake::Upkeep() {
  pull_.Tick();
  PostPlan();
}

void Intake::Plan() {
  // (Draining, the pull subscriber refuses every request: nothing to stop here.)
  std::vector<std::shared_ptr<ServedModel>> served, generators;
  for (auto& m : parts_.served->All()) (m->engine ? generators : served).push_back(std::move(m));
  // A generator asks for as many sequences as it could start now; it runs
  // beside the executors, so it is not part of their plan. Interactive work
  // may take the places of batch-class sequences (they step aside for it);
  // batch-class work comes only while no interactive work is known to wait.
  for (const auto& g : generators) {
    if (g->retired) continue;
    if (const int64_t free = g->engine->FreeInteractiveSlots(); free > 0) pull_.Refill(g->slot, free);
    const int64_t free = g->engine->FreeSlots();
    if (free > 0 && pull_.Peek(g->slot).backlog == 0) pull_.Refill(g->batch_slot, free);
  }
  // One entry per model and priority class.
  const auto now = SteadyClock::now();
  std::vector<std::pair<ServedModel*, int>> entries;  // (model, slot)
  std::vector<ModelPullState> state;
  entries.reserve(2 * served.size());
  state.reserve(2 * served.size());
  for (const auto& m : served) {
    const int64_t batch_queued = m->batch_queued.load(std::memory_order_relaxed);
    const int64_t queued = m->queued.load(std::memory_order_relaxed);
    entries.emplace_back(m.get(), m->slot);
    state.push_back(PullStateOf(*m, m->slot, queued - batch_queued, now));
    entries.emplace_back(m.get(), m->batch_slot);
    state.push_back(PullStateOf(*m, m->batch_slot, batch_queued, now));
    state.back().batch_class = true;
    // Batch-class work runs in slices (local_queue.h): pull a slice, not a
    // whole batch, so that little of it waits here ahead of interactive work.
    const double mean_cost = m->mean_item_cost.load(std::memory_order_relaxed);
    if (mean_cost > 0) {
      const double slice_items = static_cast<double>(LocalQueue::BatchSliceCost(*m)) / mean_cost;
      state.back().batch = std::clamp<int64_t>(static_cast<int64_t>(std::min(slice_items, 1e9)), 1, state.back().batch);
    }
  }
  const PullPlan plan = PlanPulls(state, options_.executors - parts_.queue->running());
  for (size_t i = 0; i < entries.size(); ++i) {
    auto [model, slot] = entries[i];
    if (plan.probe[i]) pull_.Probe(slot);
    if (plan.want[i] > 0) Ask(*model, slot, state[i], plan.want[i], now);
  }
}

ModelPullState Intake::PullStateOf(const ServedModel& m, int slot, int64_t queued, SteadyClock::time_point now) {
  const BatchingSpec& b = m.spec->batching;
  const queue::PullSubscriber::SlotView pull = pull_.Peek(slot);
  ModelPullState st;
  st.queued = queued;
  st.backlog = pull.backlog;
  // Other workers take from the same backlog: what was heard a moment ago
  // is all that is worth trusting.
  st.known = pull.credit > 0 || now - pull.backlog_at < std::chrono::milliseconds(10);
  st.probing = pull.probing;
  st.batch = PredictedBatchItems(b.max_batch_requests, m.batching.CostCap(),
                                 m.mean_item_cost.load(std::memory_order_relaxed));
  // How long its oldest waiting work may have waited: since any worker last
  // took from it, this one started a batch of it, or its backlog was seen
  // empty, whichever was last — and for a deep backlog, as long as it has
  // been building (backlog / arrival rate).
  const auto last_batch =
      SteadyClock::time_point(SteadyClock::duration(m.last_batch_ns.load(std::memory_order_relaxed)));
  st.since_batch = now - std::max({last_batch, pull.empty_at, pull.taken_at});
  if (pull.arrivals_per_s > 0 && pull.backlog > 0) {
    st.since_batch = std::max(st.since_batch, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  std::chrono::duration<double>(pull.backlog / pull.arrivals_per_s)));
  }
  return st;
}

void Intake::Ask(ServedModel& m, int slot, const ModelPullState& st, int64_t want, SteadyClock::time_point now) {
  if (want == 1 && st.queued == 0) {
    pull_.Refill(slot, 1, DoorbellExpiry(m, now));
    return;
  }
  // A batch's worth. What the stream holds comes at once, so with a backlog
  // the request is short (a stale backlog costs little); without one it
  // fills the batch while the batch waits, and no longer.
  const BatchingSpec& b = m.spec->batching;
  const auto expiry = st.backlog > 0 ? std::chrono::milliseconds(2)
                                     : std::chrono::milliseconds(std::max<uint32_t>(
                                           5, b.adaptive.enabled ? b.adaptive.max_wait_ms : b.max_batch_wait_ms));
  if (pull_.Refill(slot, want, expiry) && st.backlog > 0 && st.queued > 0) {
    // The batch forming here should take what is on its way: up to a round
    // trip or two, until that many items are here.
    m.fill_items.store(m.queued.load(std::memory_order_relaxed) + std::min(st.backlog, want),
                       std::memory_order_relaxed);
    m.fill_until_ns.store((now + std::chrono::milliseconds(2)).time_since_epoch().count(),
                          std::memory_order_relaxed);
  }
}

// A doorbell outlives the idle spell it was rung for (pull_planner.h), so it
// lasts a quarter of the model's quiet time: a few milliseconds while its
// work comes often, up to the long-poll expiry when it is quiet.
std::chrono::milliseconds Intake::DoorbellExpiry(const ServedModel& m, SteadyClock::time_point now) const {
  const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(
      now.time_since_epoch() - SteadyClock::duration(m.last_delivery_ns.load(std::memory_order_relaxed)));
  return std::clamp(quiet / 4, std::chrono::milliseconds(5), options_.pull.expires);
}

bool Intake::StopPulling(SteadyClock::time_point deadline) {
  pull_.StopRefilling();
  return pull_.WaitRequestsEnded(deadline);
}

void Intake::Stop() {
  if (!nc_) return;
  loop_.RunAndWait([&] {
    pull_.Stop();
    // What already arrived is queued; later messages are not read. (Pushed
    // items then go unanswered — the push baseline has no redelivery —
    // until their senders drop this worker from their view.)
    for (Subscription& s : subscriptions_) {
      queue::DrainSubscription(s.sub.get(), s.handler);
      natsSubscription_Unsubscribe(s.sub.get());
    }
    subscriptions_.clear();
  });
}

void Intake::Close() {
  if (nc_) {
    natsConnection_FlushTimeout(nc_.get(), 2000);  // the last results and acks
    loop_.RunAndWait([&] {
      subscriptions_.clear();
      nc_.reset();  // closed on its own loop
    });
  }
  loop_.Stop();  // after the connection's cleanup, which it runs first
}

}  // namespace shoal::worker
