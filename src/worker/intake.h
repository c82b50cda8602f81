// Intake: the worker's way in. It owns the worker's event loop and data
// connection (queue/loop_connection.h: the loop reads the socket itself, so
// a delivered message reaches the local queue in one thread hop, and writes
// what the executors publish a batch at a time), the pull subscriber and its
// plans, and the cancellation notices of the worker's pool.
//
//   pulled item ──▶ its model (ServedModels, by pull slot) ──▶ a ticket
//                   (item_ticket.h) ──▶ the model's generation engine, or the
//                   local queue ──▶ executors
//   shoal.cancel.<pool> ──▶ CancelledRequests (BatchRunner drops those items)
//   shoal.hedge.<worker>.> ──▶ copies of items a gateway sends while their
//                   stream or consumer elects a leader (queue/subjects.h):
//                   queued like pulled ones when the model is here (and, for
//                   an `.idle` copy, the stream has delivered none of its
//                   work for pull.starved_after and no other of it is here),
//                   else dropped
//   Subscribe()  ──▶ another way in (the push baseline's, src/baselines),
//                   whose messages it hands to Accept()
//
// What to pull is the PullPlanner's call (pull_planner.h): one predicted
// batch per free executor for the models that need it most — interactive
// work before batch-class work, each model having a pull slot per class — a one-message
// doorbell on the rest, nothing while every executor is busy — so work waits
// in the shared stream for the first free device. Plans are made when work
// arrives, a request ends, a batch finishes, and on the keeper's tick —
// always on the loop, so their requests leave in its next write.
//
// Threading: deliveries, plans, subscriptions and Accept run on the loop
// thread; PostPlan, AddConsumer, DisableConsumer, Upkeep and the accessors
// from any thread (the pull subscriber has its own lock). Start order:
// Connect, then Start once the BatchRunner exists on connection().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/gate.h"
#include "queue/message.h"
#include "queue/nats.h"
#include "queue/pull_subscriber.h"
#include "worker/batch_runner.h"
#include "worker/cancelled_requests.h"
#include "worker/local_queue.h"
#include "worker/pull_planner.h"
#include "worker/served_models.h"

namespace shoal::worker {

class Intake {
 public:
  struct Options {
    std::string worker_id;
    std::string pool;
    int executors = 1;
    queue::PullTiming pull;
    queue::ConnectOptions nats;  // url and security
  };
  // The worker's parts it feeds; they outlive the intake.
  struct Parts {
    ServedModels* served;
    LocalQueue* queue;
    CancelledRequests* cancelled;
    Gate* items;  // every accepted item holds it until settled
    queue::MsgReaper* reaper;
  };

  Intake(Options options, Parts parts);
  ~Intake();  // Close()

  // Starts the loop and connects the data connection.
  Status Connect();
  // Subscribes the pull inbox and the pool's cancellations; `runner`
  // (publishing on connection()) settles what cannot run here.
  Status Start(BatchRunner* runner);

  natsConnection* connection() const { return nc_.get(); }

  // Pull slots, one per installed model (residency's).
  int AddConsumer(std::string stream, std::string consumer) { return pull_.AddConsumer(std::move(stream), std::move(consumer)); }
  void DisableConsumer(int slot) { pull_.DisableConsumer(slot); }

  // Another way in: `handler` gets each message of `subject` on the loop,
  // until Stop.
  Status Subscribe(const std::string& subject, std::function<void(queue::Message)> handler);
  // Queues a work message that came outside JetStream for `model_id` (no
  // ack). Pushed (nothing redelivers it): answered NO_CAPACITY at once when
  // the model is not served here; hedged (the stream holds it too): dropped
  // then. On the loop. True when it was queued.
  bool Accept(std::string_view model_id, queue::Message msg, ItemSource source = ItemSource::kPushed);

  // Plans pulls (on the loop), or asks the loop to (from anywhere).
  void Plan();
  void PostPlan();
  // The keeper's tick: forgets expired pull requests, plans.
  void Upkeep();
  // When the next open pull request will be forgotten.
  SteadyClock::time_point EarliestForgetAt() const { return pull_.EarliestForgetAt(); }

  queue::PullSubscriber::SlotView Peek(int slot) { return pull_.Peek(slot); }
  uint64_t pull_requests_sent() const { return pull_.requests_sent(); }

  // Draining, in order: stop asking for work and let the open pull requests
  // run out (true when they did by `deadline`); stop taking any (pulls,
  // subscriptions; what arrived is queued); close the connection once the
  // last results and acks are written.
  bool StopPulling(SteadyClock::time_point deadline);
  void Stop();
  void Close();

 private:
  void OnReadable();
  // Whether a copy of `model_id`'s work for idle hands runs here (noted if
  // so): the stream has delivered none of the model's work for
  // pull.starved_after, and none runs or waits here but such copies.
  bool TakesIdleCopy(std::string_view model_id);
  void OnDelivered(const queue::PullSubscriber::Delivery& d, queue::Message msg);
  // Takes a ticket for `item` and hands it to its model's engine or the
  // local queue; settles it instead when the worker is draining.
  void Queue(WorkItem item);
  // `m`'s pull state on `slot` (one of its priority classes), with `queued`
  // of that class's items here.
  ModelPullState PullStateOf(const ServedModel& m, int slot, int64_t queued,
                             SteadyClock::time_point now);
  void Ask(ServedModel& m, int slot, const ModelPullState& st, int64_t want,
           SteadyClock::time_point now);
  std::chrono::milliseconds DoorbellExpiry(const ServedModel& m, SteadyClock::time_point now) const;

  struct Subscription {
    queue::SubscriptionPtr sub;
    std::function<void(queue::Message)> handler;
  };

  const Options options_;
  const Parts parts_;
  BatchRunner* runner_ = nullptr;
  EventLoop loop_;
  queue::PullSubscriber pull_;
  queue::ConnectionPtr nc_;                 // closed on the loop
  std::vector<Subscription> subscriptions_;  // cancellations, then others; the loop's alone
};

}  // namespace shoal::worker
