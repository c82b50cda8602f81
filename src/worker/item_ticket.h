// ItemTicket: a work item's place in the worker's accounting, from the
// moment the worker accepts it until it is settled. It counts the item in
// its model's `queued` (and `batch_queued`, for batch-class work) while the
// item waits (the local queue, a generation engine's line) and in
// `in_flight` while it runs, and holds the worker's
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
  ItemTicket(ServedModel* model, Gate::Holder hold, bool batch_class = false)
      : model_(model), hold_(std::move(hold)), batch_(batch_class) {
    Enter(kQueued);
  }
  ItemTicket(ItemTicket&& other) noexcept
      : model_(std::exchange(other.model_, nullptr)),
        hold_(std::move(other.hold_)),
        state_(std::exchange(other.state_, kNone)),
        batch_(other.batch_) {}
  ItemTicket& operator=(ItemTicket&& other) noexcept {
    if (this != &other) {
      Release();
      model_ = std::exchange(other.model_, nullptr);
      hold_ = std::move(other.hold_);
      state_ = std::exchange(other.state_, kNone);
      batch_ = other.batch_;
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

  void Count(State s, int64_t delta) {
    if (s == kQueued) {
      model_->queued.fetch_add(delta, std::memory_order_relaxed);
      if (batch_) model_->batch_queued.fetch_add(delta, std::memory_order_relaxed);
    } else if (s == kInFlight) {
      model_->in_flight.fetch_add(delta, std::memory_order_relaxed);
    }
  }
  void Enter(State s) {
    Count(s, 1);
    state_ = s;
  }
  void Move(State from, State to) {
    if (state_ != from) return;
    Count(from, -1);
    Enter(to);
  }
  void Release() {
    if (model_) Count(state_, -1);
    state_ = kNone;
    model_ = nullptr;
    hold_.reset();
  }

  ServedModel* model_ = nullptr;
  std::optional<Gate::Holder> hold_;
  State state_ = kNone;
  bool batch_ = false;
};

}  // namespace shoal::worker
