#include "gateway/batch_runner.h"

#include <algorithm>
#include <ctime>
#include <deque>

#include "common/clock.h"
#include "common/log.h"
#include "gateway/router.h"
#include "queue/priority.h"

namespace shoal::gateway {
namespace {

using queue::BatchStatus;

constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kFirstBackoff = std::chrono::milliseconds(250);
// How often a job's record shows new counts (the API's progress).
constexpr auto kProgressPeriod = std::chrono::milliseconds(500);

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

bool Retryable(int status) { return status == 429 || status == 503 || status == 504; }

std::string_view RequestId(const http::Response& r) {
  for (const auto& [name, value] : r.headers) {
    if (name == "X-Shoal-Request-Id") return value;
  }
  return "";
}

}  // namespace

struct BatchRunner::Job {
  queue::BatchRecord record;
  uint64_t revision = 0;
  uint64_t generation = 0;
  std::vector<BatchLine> lines;
  std::vector<uint8_t> done;   // by index in `lines`
  std::vector<uint8_t> tries;  // answers 429/503/504 so far
  std::deque<uint32_t> queue;  // indices to send, in order
  std::multimap<SteadyClock::time_point, uint32_t> retries;  // indices to send again at
  size_t in_flight = 0;
  SteadyClock::time_point renew_at;    // of the lease
  SteadyClock::time_point written_at;  // the record, last
  bool dirty = false;  // counts changed since the record was written

  bool Sending() const {
    return record.status == BatchStatus::kInProgress && (record.expires_at == 0 || Now() < record.expires_at);
  }
};

BatchRunner::BatchRunner(BatchRunnerOptions options, queue::BatchStore* batches, queue::FileStore* files,
                         SubmitFn submit, CallerFn caller)
    : options_(std::move(options)),
      batches_(batches),
      files_(files),
      submit_(std::move(submit)),
      caller_(std::move(caller)) {}

BatchRunner::~BatchRunner() { Stop(); }

Status BatchRunner::Start() {
  auto watch = Watch();
  if (!watch.ok()) return watch.status();
  watch_ = std::move(watch).value();
  loop_.Start();
  running_ = true;
  loop_.Every(kTick, [this] { Tick(); });
  return Status::Ok();
}

Result<std::unique_ptr<queue::KvWatch>> BatchRunner::Watch() {
  return queue::KvWatch::Start(
      batches_->records(), [this](const queue::KvChange& c) { loop_.Post([this, c] { OnRecord(c); }); }, nullptr);
}

void BatchRunner::Stop() {
  if (!running_) return;
  running_ = false;
  loop_.RunAndWait([this] {
    watch_.reset();
    stopped_ = true;
    for (auto& [id, job] : jobs_) {  // give the leases back: whoever starts next resumes at once
      (void)Write(*job, /*hold=*/false);
      spdlog::info("batch {}: handed back ({} of {} answered)", id, job->record.completed + job->record.failed,
                   job->record.total);
    }
    jobs_.clear();
    PublishProgress();
  });
  loop_.Stop();
}

std::vector<queue::BatchRecord> BatchRunner::Active() const {
  std::lock_guard lock(progress_mu_);
  return active_;
}

std::string BatchRunner::MetricsText() const {
  std::vector<Progress> running;
  {
    std::lock_guard lock(progress_mu_);
    running = progress_;
  }
  std::string out =
      "# HELP shoal_batch_jobs_running Batch jobs this gateway runs now.\n"
      "# TYPE shoal_batch_jobs_running gauge\n"
      "shoal_batch_jobs_running " + std::to_string(running.size()) + "\n";
  if (running.empty()) return out;
  out +=
      "# HELP shoal_batch_requests Requests of a batch job this gateway runs, by state.\n"
      "# TYPE shoal_batch_requests gauge\n";
  for (const Progress& p : running) {
    for (const auto& [state, n] : {std::pair{"total", p.total}, std::pair{"completed", p.completed},
                                   std::pair{"failed", p.failed}, std::pair{"in_flight", p.in_flight}}) {
      out += "shoal_batch_requests{batch=\"" + p.id + "\",state=\"" + state + "\"} " + std::to_string(n) + "\n";
    }
  }
  return out;
}

void BatchRunner::OnRecord(const queue::KvChange& change) {
  if (change.deleted) {
    known_.erase(change.key);
    return;
  }
  auto record = queue::ParseBatchRecord(change.value);
  if (!record.ok()) {
    spdlog::warn("batch {}: unreadable record skipped: {}", change.key, record.status().ToString());
    return;
  }
  const auto it = jobs_.find(change.key);
  if (it != jobs_.end() && change.revision > it->second->revision) {
    Job& job = *it->second;
    if (record->runner != options_.runner_id) {  // our lease lapsed and another runner took it
      spdlog::warn("batch {}: taken over by {}", change.key, record->runner);
      Drop(change.key);
    } else {
      // Another writer changed it (a cancel): take the change and its revision.
      if (record->status == BatchStatus::kCancelling && job.record.status == BatchStatus::kInProgress) {
        job.record.status = BatchStatus::kCancelling;
        job.record.cancelling_at = record->cancelling_at;
      }
      job.revision = change.revision;
    }
  }
  known_[change.key] = queue::VersionedBatch{std::move(record).value(), change.revision};
}

void BatchRunner::Tick() {
  if (stopped_) return;
  if (watch_->ended()) {  // it gave up (the server went away for long): follow the bucket again
    auto watch = Watch();
    if (watch.ok()) watch_ = std::move(watch).value();
  }
  const int64_t now_ms = UnixMillis();
  for (const auto& [id, batch] : known_) {
    const queue::BatchRecord& r = batch.record;
    if (queue::Finished(r.status) || jobs_.count(id)) continue;
    if (r.runner.empty() || r.lease_until_ms < now_ms) Claim(batch);
  }
  const auto now = SteadyClock::now();
  std::vector<std::string> ids;
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  for (const std::string& id : ids) {
    const auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    Job& job = *it->second;
    for (auto r = job.retries.begin(); r != job.retries.end() && r->first <= now;) {
      job.queue.push_front(r->second);
      r = job.retries.erase(r);
    }
    if (job.in_flight == 0) {
      if (job.record.status == BatchStatus::kCancelling) {
        Finish(job, BatchStatus::kCancelled);
        continue;
      }
      if (job.record.status == BatchStatus::kInProgress && !job.Sending()) {
        Finish(job, BatchStatus::kExpired);
        continue;
      }
      if (job.queue.empty() && job.retries.empty()) {
        Finish(job, BatchStatus::kCompleted);
        continue;
      }
    }
    const bool progress = job.dirty && now - job.written_at >= kProgressPeriod;
    if ((progress || now >= job.renew_at) && Write(job) == Written::kNotOurs) Drop(id);
  }
  Fill();
  PublishProgress();
}

void BatchRunner::Claim(const queue::VersionedBatch& batch) {
  auto job = std::make_unique<Job>();
  job->record = batch.record;
  job->record.runner = options_.runner_id;
  job->record.lease_until_ms = UnixMillis() + options_.lease.count();
  auto revision = batches_->Replace(job->record, batch.revision);
  if (!revision.ok()) return;  // another runner was first: the watch will say so
  job->revision = *revision;
  job->generation = ++generation_;
  job->renew_at = SteadyClock::now() + options_.lease / 3;
  spdlog::info("batch {}: claimed ({})", batch.record.id, queue::BatchStatusName(batch.record.status));
  if (!Load(*job)) return;
  jobs_[batch.record.id] = std::move(job);
}

bool BatchRunner::Load(Job& job) {
  queue::BatchRecord& r = job.record;
  const auto fail = [&](std::string code, std::string message) {
    spdlog::warn("batch {}: failed: {}", r.id, message);
    r.errors.push_back({std::move(code), std::move(message), 0});
    Finish(job, BatchStatus::kFailed);
    return false;
  };
  auto file = files_->Find(r.input_file_id);
  if (file.status().code() == Code::kNotFound) return fail("file_not_found", file.status().message());
  auto bytes = file.ok() ? files_->Read(*file) : Result<std::string>(file.status());
  if (bytes.status().code() == Code::kNotFound) return fail("file_not_found", bytes.status().message());
  auto results = bytes.ok() ? batches_->Results(r.id) : Result<std::vector<queue::BatchResult>>(bytes.status());
  if (!results.ok()) {  // the store is unreachable now: the lease lapses and the claim is tried again
    spdlog::warn("batch {}: cannot load it now: {}", r.id, results.status().ToString());
    return false;
  }
  auto lines = ParseBatchLines(*bytes, r.endpoint);
  if (!lines.ok()) return fail("invalid_file", lines.status().message());
  job.lines = std::move(lines).value();
  job.done.assign(job.lines.size(), 0);
  job.tries.assign(job.lines.size(), 0);
  std::map<uint32_t, uint32_t> index_of;  // line number → index
  for (uint32_t i = 0; i < job.lines.size(); ++i) index_of[job.lines[i].number] = i;
  r.completed = r.failed = 0;
  for (const queue::BatchResult& result : *results) {
    const auto it = index_of.find(result.line);
    if (it == index_of.end() || job.done[it->second]) continue;
    job.done[it->second] = 1;
    ++(result.ok ? r.completed : r.failed);
  }
  for (uint32_t i = 0; i < job.lines.size(); ++i) {
    if (job.done[i]) continue;
    if (job.lines[i].error.empty()) {
      job.queue.push_back(i);
    } else if (!Keep(job, i, false, UnsentLine(job.lines[i], "invalid_request", job.lines[i].error)).ok()) {
      return false;
    }
  }
  if (r.status == BatchStatus::kValidating) {
    r.status = BatchStatus::kInProgress;
    r.in_progress_at = Now();
  }
  r.total = job.lines.size();
  if (!results->empty()) {
    spdlog::info("batch {}: resumed, {} of {} lines already answered", r.id, results->size(), r.total);
  }
  return Write(job) == Written::kYes;
}

void BatchRunner::Fill() {
  bool sent = true;
  while (sent && in_flight_ < options_.max_in_flight) {
    sent = false;
    for (auto& [id, job] : jobs_) {
      if (in_flight_ >= options_.max_in_flight) break;
      if (!job->Sending() || job->queue.empty()) continue;
      const uint32_t index = job->queue.front();
      job->queue.pop_front();
      Send(*job, index);
      sent = true;
    }
  }
}

void BatchRunner::Send(Job& job, uint32_t index) {
  const BatchLine& line = job.lines[index];
  auto caller = caller_(job.record.owner);
  if (!caller.ok()) {
    if (caller.status().code() == Code::kNoCapacity) {  // keys unreadable for now
      job.retries.emplace(SteadyClock::now() + options_.max_backoff, index);
    } else {
      (void)Keep(job, index, false, UnsentLine(line, "unauthenticated", caller.status().message()));
    }
    return;
  }
  http::Request req;
  req.method = "POST";
  req.path = line.url;
  req.content_type = "application/json";
  req.accept = "application/json";
  req.timeout_ms = std::to_string(RouterOptions{}.max_timeout.count());  // queued behind interactive work
  req.priority = std::string(queue::PriorityName(queue::Priority::kBatch));
  req.body = line.body;
  ++job.in_flight;
  ++in_flight_;
  // Collects the response (a streamed one from its parts) and hands it to
  // the loop.
  struct Answer {
    bool started = false;
    http::Response r;
  };
  auto answer = std::make_shared<Answer>();
  auto respond = [this, id = job.record.id, generation = job.generation, index, answer](http::Response part) {
    if (!answer->started) {
      answer->started = true;
      answer->r = std::move(part);
    } else {
      answer->r.body += part.body;
      answer->r.more = part.more;
    }
    if (answer->r.more) return;
    loop_.Post([this, id, generation, index, r = std::move(answer->r)]() mutable {
      OnAnswer(id, generation, index, std::move(r));
    });
  };
  submit_(std::move(req), std::move(caller).value(), std::move(respond));
}

void BatchRunner::OnAnswer(const std::string& id, uint64_t generation, uint32_t index, http::Response r) {
  if (stopped_) return;
  --in_flight_;
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second->generation != generation) return Fill();  // dropped meanwhile
  Job& job = *it->second;
  --job.in_flight;
  const BatchLine& line = job.lines[index];
  if (Retryable(r.status)) {
    // Sent again while the job runs; once it is cancelled or expired the
    // line stays unanswered.
    const int tries = std::min<int>(++job.tries[index], 6);
    const auto backoff = std::min<std::chrono::milliseconds>(kFirstBackoff * (1 << tries), options_.max_backoff);
    job.retries.emplace(SteadyClock::now() + backoff, index);
  } else if (!Keep(job, index, r.status >= 200 && r.status < 300,
                   AnsweredLine(line, r.status, RequestId(r), r.body))
                  .ok()) {
    job.retries.emplace(SteadyClock::now() + options_.max_backoff, index);  // unkept: it runs again
  }
  Fill();
}

Status BatchRunner::Keep(Job& job, uint32_t index, bool ok, std::string jsonl) {
  const Status s = batches_->PutResult(job.record.id, {job.lines[index].number, ok, std::move(jsonl)});
  if (!s.ok()) {
    spdlog::warn("batch {}: the result of line {} could not be kept: {}", job.record.id, job.lines[index].number,
                 s.ToString());
    return s;
  }
  job.done[index] = 1;
  ++(ok ? job.record.completed : job.record.failed);
  job.dirty = true;
  return s;
}

BatchRunner::Written BatchRunner::Write(Job& job, bool hold) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    job.record.runner = hold ? options_.runner_id : "";
    job.record.lease_until_ms = hold ? UnixMillis() + options_.lease.count() : 0;
    auto revision = batches_->Replace(job.record, job.revision);
    if (revision.ok()) {
      job.revision = *revision;
      job.written_at = SteadyClock::now();
      job.renew_at = job.written_at + options_.lease / 3;
      job.dirty = false;
      return Written::kYes;
    }
    // Changed meanwhile: by a cancel (take it), or by another runner.
    auto fresh = batches_->Find(job.record.id);
    if (!fresh.ok()) break;
    if (fresh->record.runner != options_.runner_id) return Written::kNotOurs;
    if (fresh->record.status == BatchStatus::kCancelling && job.record.status == BatchStatus::kInProgress) {
      job.record.status = BatchStatus::kCancelling;
      job.record.cancelling_at = fresh->record.cancelling_at;
    }
    job.revision = fresh->revision;
  }
  job.record.runner = options_.runner_id;  // still ours, as far as anyone knows
  job.renew_at = SteadyClock::now() + std::chrono::seconds(1);  // the store is unreachable: try again soon
  return Written::kLater;
}

void BatchRunner::Finish(Job& job, BatchStatus status) {
  queue::BatchRecord& r = job.record;
  if (status == BatchStatus::kCompleted && r.status != BatchStatus::kFinalizing) {
    r.status = BatchStatus::kFinalizing;
    r.finalizing_at = Now();
    if (const Written w = Write(job); w != Written::kYes) {
      if (w == Written::kNotOurs) Drop(r.id);
      return;
    }
  }
  uint64_t completed = 0, failed = 0;
  if (status != BatchStatus::kFailed) {
    auto results = batches_->Results(r.id);
    if (!results.ok()) {
      spdlog::warn("batch {}: cannot read its results now: {}", r.id, results.status().ToString());
      return;
    }
    std::string output, errors;
    for (const queue::BatchResult& result : *results) {
      (result.ok ? output : errors) += result.jsonl + "\n";
      ++(result.ok ? completed : failed);
    }
    if (status == BatchStatus::kExpired) {
      for (uint32_t i = 0; i < job.lines.size(); ++i) {
        if (job.done[i]) continue;
        errors += UnsentLine(job.lines[i], "batch_expired",
                             "This request could not be executed before the completion window expired.") +
                  "\n";
        ++failed;
      }
    }
    for (auto [bytes, suffix, id] : {std::tuple{&output, "_output.jsonl", &r.output_file_id},
                                     std::tuple{&errors, "_error.jsonl", &r.error_file_id}}) {
      if (bytes->empty() || !id->empty()) continue;  // none, or written by an earlier try
      queue::FileRecord file;
      file.filename = r.id + suffix;
      file.purpose = "batch_output";
      file.owner = r.owner;
      auto stored = files_->Add(std::move(file), *bytes);
      if (!stored.ok()) {
        spdlog::warn("batch {}: cannot write its {} file now: {}", r.id, suffix, stored.status().ToString());
        return;
      }
      *id = stored->id;
      // Kept at once: a runner that resumes the job finds the file instead of writing another.
      if (Write(job) == Written::kNotOurs) return Drop(r.id);
    }
  }
  queue::BatchRecord final = r;
  final.status = status;
  if (status != BatchStatus::kFailed) {
    final.completed = completed;
    final.failed = failed;
  }
  const int64_t now = Now();
  (status == BatchStatus::kCompleted  ? final.completed_at
   : status == BatchStatus::kExpired  ? final.expired_at
   : status == BatchStatus::kFailed   ? final.failed_at
                                      : final.cancelled_at) = now;
  final.runner.clear();
  final.lease_until_ms = 0;
  if (!batches_->Replace(final, job.revision).ok()) {  // a cancel came meanwhile, or the store is away
    auto fresh = batches_->Find(r.id);
    if (fresh.ok() && fresh->record.runner != options_.runner_id) return Drop(r.id);
    if (fresh.ok()) job.revision = fresh->revision;
    return;  // the final status wins on the next try
  }
  if (Status s = batches_->DropResults(r.id); !s.ok()) spdlog::warn("batch {}: {}", r.id, s.ToString());
  spdlog::info("batch {}: {} ({} completed, {} failed of {})", r.id, queue::BatchStatusName(status), final.completed,
               final.failed, final.total);
  Drop(r.id);
}

void BatchRunner::Drop(const std::string& id) {
  jobs_.erase(id);  // answers still coming are told apart by the generation
}

void BatchRunner::PublishProgress() {
  std::vector<Progress> progress;
  std::vector<queue::BatchRecord> active;
  for (const auto& [id, job] : jobs_) {
    progress.push_back({id, job->record.total, job->record.completed, job->record.failed, job->in_flight});
  }
  for (const auto& [id, batch] : known_) {
    if (queue::Finished(batch.record.status)) continue;
    const auto mine = jobs_.find(id);
    active.push_back(mine == jobs_.end() ? batch.record : mine->second->record);
  }
  std::lock_guard lock(progress_mu_);
  progress_ = std::move(progress);
  active_ = std::move(active);
}

}  // namespace shoal::gateway
