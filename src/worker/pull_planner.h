// PullPlanner: how much a worker asks JetStream for, per model, right now.
//
// The point of pulling is that work waits in the shared stream until some
// device is about to run it, so the first free device takes the next batch
// whole. A worker that asks for more than it can start soon turns the shared
// queue back into per-worker queues — what a push router does. So:
//
//  - Credit only for free executors. Executors that run a batch, or that have
//    a full batch waiting here, ask for nothing; what the stream holds stays
//    there for whichever device frees first.
//  - One batch per free executor, for the models whose work has waited
//    longest, leaning toward fuller batches: score = how long its work may
//    have waited (since any worker last took from it, or its backlog was
//    last seen empty) × √(items waiting, here and in the backlog, up to a
//    batch).
//    A cold model's score grows with its wait, so it is not starved beside
//    a hot one; a hot model's batches fill from the backlog that builds.
//  - Priority classes (queue/priority.h): each model has an entry per
//    class, and interactive candidates are served before any batch-class
//    one, so batch work takes only the executors interactive work leaves
//    free (and interactive backlogs are probed before batch work is chosen).
//  - With an executor still unspoken for, a doorbell of one message on every
//    other model with nothing queued here: an idle worker hears of new work
//    at once and learns the backlog from the delivery (pull_subscriber.h),
//    without taking a batch's worth.
//  - Backlogs are learned from deliveries and probes (pull_subscriber.h). A
//    free executor first probes the models whose backlog it has not heard
//    of lately (and that have no request out), and chooses once the answers
//    are in: one round trip, against a batch that sits in the stream.
//  - The batch size is predicted: max_batch_requests, or fewer when the
//    model's mean item cost says max_batch_tokens closes the batch first.
//
// Requests cannot be withdrawn, and JetStream hands each message to the
// waiting requests in turn, so a doorbell that outlives its worker's idle
// spell draws work to a busy device. The worker therefore gives a model's
// doorbell an expiry that follows that model's quiet time (worker.cc):
// a few milliseconds for a model in steady traffic, up to the long-poll
// expiry for one that is quiet, so an idle worker does not spin either.
//
// Pure logic on a snapshot: no locks, no clock of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace shoal::worker {

// One model's work of one priority class.
struct ModelPullState {
  bool batch_class = false;  // batch priority: after every interactive candidate
  int64_t queued = 0;        // its items in the local queue
  int64_t backlog = 0;       // the stream's backlog for it, as last seen
  bool known = true;         // `backlog` is recent, or a request is out that would hear of more
  bool probing = false;      // a probe is on its way
  int64_t batch = 1;         // predicted items in one batch (≥ 1)
  std::chrono::nanoseconds since_batch{0};  // how long its work may have waited
};

struct PullPlan {
  std::vector<int64_t> want;  // credit per model (as `models`); 0: ask nothing
  std::vector<bool> probe;    // ask the server for its backlog first
};
PullPlan PlanPulls(const std::vector<ModelPullState>& models, int idle_executors);

// Items one batch of a model is predicted to hold.
int64_t PredictedBatchItems(uint32_t max_batch_requests, uint32_t max_batch_tokens,
                            double mean_item_cost);

}  // namespace shoal::worker
