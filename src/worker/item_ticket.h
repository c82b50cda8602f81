// ItemTicket: a work item's place in the worker's accounting, from the
// moment the worker accepts it until it is settled. It counts the item in
// its model's `queued` while the item waits (the local queue, a generation
// engine's line) and in `in_flight` while it runs, and holds the worker's
// item gate the whole time — so a drain waits on the gate (common/gate.h)
// and no counter is changed by hand.
//
// The ticket lives in its WorkItem and goes with it: an item that is
// settled and freed gives everything back in one place, however it ended.
//
// Threading: a ticket is used by whoever holds its item (one thread at a
// time); the counters are atomics. The model outlives the ticket (the item
// that holds both holds the model first).
#pragma once

#include <optional>
#include <utility>

#include "common/gate.h"
#include "worker/served_model.h"

namespace shoal::worker {

class ItemTicket {
 public:
  ItemTicket() = default;
  // Counts an item queued on `model`, holding `hold` in the item gate.
  ItemTicket(ServedModel* model, Gate::Holder hold) : model_(model), hold_(std::move(hold)), state_(kQueued) {
    model_->queued.fetch_add(1, std::memory_order_relaxed);
  }
  ItemTicket(ItemTicket&& other) noexcept
      : model_(std::exchange(other.model_, nullptr)),
        hold_(std::move(other.hold_)),
        state_(std::exchange(other.state_, kNone)) {}
  ItemTicket& operator=(ItemTicket&& other) noexcept {
    if (this != &other) {
      Release();
      model_ = std::exchange(other.model_, nullptr);
      hold_ = std::move(other.hold_);
      state_ = std::exchange(other.state_, kNone);
    }
    return *this;
  }
  ItemTicket(const ItemTicket&) = delete;
  ItemTicket& operator=(const ItemTicket&) = delete;
  ~ItemTicket() { Release(); }

  // Queued → running (its batch started, its sequence was admitted).
  void Start() { Move(kQueued, kInFlight); }
  // Running → queued (a preempted sequence, back in line).
  void Requeue() { Move(kInFlight, kQueued); }

 private:
  enum State { kNone, kQueued, kInFlight };

  std::atomic<int64_t>& Counter(State s) { return s == kQueued ? model_->queued : model_->in_flight; }
  void Move(State from, State to) {
    if (state_ != from) return;
    Counter(from).fetch_sub(1, std::memory_order_relaxed);
    Counter(to).fetch_add(1, std::memory_order_relaxed);
    state_ = to;
  }
  void Release() {
    if (state_ != kNone) Counter(state_).fetch_sub(1, std::memory_order_relaxed);
    state_ = kNone;
    model_ = nullptr;
    hold_.reset();
  }

  ServedModel* model_ = nullptr;
  std::optional<Gate::Holder> hold_;
  State state_ = kNone;
};

}  // namespace shoal::worker
