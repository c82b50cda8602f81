// BatchRunner: runs the jobs of the Batch API. Every gateway has one; a job
// is run by one runner at a time, the one holding its lease (the record's
// "runner" and "lease_until_ms", written by compare-and-set and renewed
// every third of the lease). A gateway that stops gives its jobs' leases
// back; one that dies loses them when they lapse; either way another
// runner (or the same gateway, restarted) claims the job and resumes it.
//
// Running a job: read its input file (batch_lines.h), skip the lines whose
// results are stored (queue/batch_store.h) — a resumed job never runs a
// line twice once its result is kept — and send the rest through the
// gateway's own router, as the key that created the job, at batch priority
// (queue/priority.h): into the same JetStream work streams, pulled only
// when interactive work leaves a worker idle. Each answer is stored before
// it counts. A 429, 503 or 504 (no capacity now, a deadline passed while
// queued) is sent again after a backoff; other answers are final: 2xx to
// the output file, the rest to the error file. When every line is
// answered, or the job is cancelled (the lines in flight finish) or its
// completion window passes (the lines not sent go to the error file as
// "batch_expired"), the runner writes the output and error files (the
// FileStore, purpose "batch_output") and the job's final status.
//
// A job's requests are not charged to its key's rate limits: they run on
// the capacity interactive traffic leaves, and a runner keeps at most
// `max_in_flight` of them in flight, shared round-robin by its jobs.
//
// Threading: the runner works on a thread of its own (an EventLoop: the
// KV and file calls block); the watch of shoal_batches posts to it, and so
// do the answers, from the lanes. Active() and MetricsText() from any
// thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "gateway/auth.h"
#include "gateway/batch_lines.h"
#include "http/http.h"
#include "queue/batch_store.h"
#include "queue/file_store.h"
#include "queue/kv_watch.h"

namespace shoal::gateway {

struct BatchRunnerOptions {
  std::string runner_id;  // the gateway's id
  size_t max_in_flight = 256;
  std::chrono::milliseconds lease{15000};
  std::chrono::milliseconds max_backoff{10000};  // between tries of a line answered 429/503/504
};

class BatchRunner {
 public:
  // Sends a request through the router as `caller`; `respond` may be
  // called on any thread.
  using SubmitFn = std::function<void(http::Request, Caller, http::Responder)>;
  // The caller a job's owner stands for now: kUnauthenticated when its key
  // was revoked (the job's lines fail), kNoCapacity when keys cannot be
  // read (they wait).
  using CallerFn = std::function<Result<Caller>(const std::string& owner)>;

  // `batches` and `files` are not owned; they outlive this.
  BatchRunner(BatchRunnerOptions options, queue::BatchStore* batches, queue::FileStore* files, SubmitFn submit,
              CallerFn caller);
  ~BatchRunner();  // Stop()

  Status Start();
  // Sends nothing more and gives the leases back; answers still coming are
  // dropped (their lines run again wherever the job resumes).
  void Stop();

  // Every job not finished, cluster-wide, as the watch last saw it (the
  // ones this runner runs, as they are now): for /v1/cluster and the
  // dashboard.
  std::vector<queue::BatchRecord> Active() const;
  // Their counts for GET /metrics (Prometheus text):
  //   shoal_batch_jobs_running                   jobs this gateway runs
  //   shoal_batch_requests{batch,state}          total, completed, failed, in_flight
  std::string MetricsText() const;

 private:
  struct Job;
  // A job this runner runs, as the metrics show it.
  struct Progress {
    std::string id;
    uint64_t total = 0, completed = 0, failed = 0, in_flight = 0;
  };

  // Follows shoal_batches: every record, then each change, to OnRecord.
  Result<std::unique_ptr<queue::KvWatch>> Watch();
  void OnRecord(const queue::KvChange& change);
  void Tick();
  void Claim(const queue::VersionedBatch& batch);
  // Reads the input and the stored results; false when the job failed.
  bool Load(Job& job);
  void Fill();
  void Send(Job& job, uint32_t index);
  void OnAnswer(const std::string& id, uint64_t generation, uint32_t index, http::Response r);
  // Stores line `index`'s result, then counts it.
  Status Keep(Job& job, uint32_t index, bool ok, std::string jsonl);
  enum class Written { kYes, kNotOurs, kLater };
  // Writes the job's record with this runner's lease renewed (`hold`) or
  // given back; on a conflict reads it again and takes what others may
  // change (a cancel). kNotOurs: another runner holds it now.
  Written Write(Job& job, bool hold = true);
  // Writes the output and error files and the final status; what fails
  // for now is tried again on the next tick.
  void Finish(Job& job, queue::BatchStatus status);
  void Drop(const std::string& id);
  void PublishProgress();

  const BatchRunnerOptions options_;
  queue::BatchStore* const batches_;
  queue::FileStore* const files_;
  const SubmitFn submit_;
  const CallerFn caller_;
  EventLoop loop_;
  bool running_ = false;  // Start and Stop's thread only
  // On the loop's thread only:
  std::map<std::string, queue::VersionedBatch> known_;  // every job, as last seen
  std::map<std::string, std::unique_ptr<Job>> jobs_;    // the jobs this runner runs
  size_t in_flight_ = 0;
  uint64_t generation_ = 0;  // tells a dropped job's late answers from a resumed one's
  bool stopped_ = false;

  mutable std::mutex progress_mu_;
  std::vector<Progress> progress_;          // guarded by progress_mu_
  std::vector<queue::BatchRecord> active_;  // guarded by progress_mu_
  std::unique_ptr<queue::KvWatch> watch_;   // replaced and reset on the loop's thread
};

}  // namespace shoal::gateway
