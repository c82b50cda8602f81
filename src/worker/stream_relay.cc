#include "worker/stream_relay.h"

#include <algorithm>
#include <optional>

#include "common/clock.h"
#include "common/log.h"
#include "wire/generate.h"
#include "worker/generation_inputs.h"
#include "worker/generation_reply.h"

namespace shoal::worker {

// One request in the runtime's hands.
struct StreamRelay::Job {
  std::mutex mu;  // orders updates against the sweep's +WPI and cancel
  WorkItem item;  // guarded by mu
  uint64_t key = 0;     // in jobs_
  uint64_t handle = 0;  // the runtime's; set once Start returned (guarded by mu)
  bool started = false;                 // guarded by mu
  std::optional<Outcome> verdict;       // the relay ended it (cancelled, expired, stopping); guarded by mu
  bool ended = false;                   // its final update came; guarded by mu
  uint32_t seq = 0;                     // the next chunk's number
  uint32_t generated = 0;
  SteadyClock::time_point started_at{}, first_token{}, last_token{};
  int64_t started_unix_us = 0;
  std::string reply;  // scratch
};

namespace {

// The work's request as the runtime's job; INVALID_INPUT when it cannot be one.
Status ToJob(const WorkItem& it, const ServedModel& model, GenerationJob* job) {
  if (it.work.task != Task::kGenerate) {
    return InvalidInput("model '" + model.spec->id + "' generates; task '" + std::string(TaskName(it.work.task)) +
                        "' is not supported");
  }
  wire::GenerateRequest req;
  SHOAL_RETURN_IF_ERROR(wire::DecodeGenerateWork(it.payload, &req));
  job->chat = req.kind == wire::GenerateRequest::Kind::kChat;
  job->prompt = std::move(req.prompt);
  job->add_special_tokens = !job->chat;
  for (wire::ChatMessage& m : req.messages) {
    job->messages.push_back({.role = std::move(m.role), .content = std::move(m.content), .tool_calls_json = {},
                             .tool_call_id = {}, .parts = {}});
  }
  job->add_generation_prompt = req.add_generation_prompt;
  job->chat_template_kwargs_json = std::move(req.chat_template_kwargs_json);
  // Tools are not carried to runtimes that render their own prompts yet.
  auto no_tools = [&](const std::string& field) {
    return InvalidInput(field + ": model '" + model.spec->id + "' (runtime " + model.spec->runtime +
                        ") does not call tools; the native runtime does");
  };
  if (!req.tools_json.empty()) return no_tools("tools");
  if (const auto images = Images(req.messages); !images.empty()) {
    return InvalidInput(images[0].field + ": model '" + model.spec->id + "' (runtime " + model.spec->runtime +
                        ") reads no images; the native runtime's vision-language models do");
  }
  for (size_t i = 0; i < req.messages.size(); ++i) {
    const wire::ChatMessage& m = req.messages[i];
    if (!m.tool_calls.empty()) return no_tools("messages[" + std::to_string(i) + "].tool_calls");
    if (!m.tool_call_id.empty()) return no_tools("messages[" + std::to_string(i) + "].tool_call_id");
  }
  const wire::SamplingParams& p = req.sampling;
  if (p.top_logprobs > 0) {
    return InvalidInput("top_logprobs: model '" + model.spec->id + "' (runtime " + model.spec->runtime +
                        ") gives the chosen tokens' logprobs only; the native runtime gives alternatives");
  }
  // The generator applies them, or fails the job naming the one it cannot.
  job->adjustments = {.presence_penalty = p.presence_penalty,
                      .frequency_penalty = p.frequency_penalty,
                      .repetition_penalty = p.repetition_penalty,
                      .logit_bias = p.logit_bias,
                      .min_tokens = p.min_tokens};
  job->max_tokens = p.max_tokens;
  job->sampling = {.temperature = p.temperature, .top_p = p.top_p, .top_k = p.top_k};
  job->seed = SequenceSeed(p.seed, it.work.request_id, it.work.item);
  job->stop = p.stop;
  job->stop_token_ids = p.stop_token_ids;
  job->ignore_eos = p.ignore_eos;
  job->logprobs = p.logprobs;
  job->lora = std::string(it.work.lora);
  using Type = wire::ResponseFormat::Type;
  wire::ResponseFormat& f = req.response_format;
  if (f.type == Type::kRegex || f.type == Type::kChoice) {
    return InvalidInput("response_format: model '" + model.spec->id + "' (runtime " + model.spec->runtime +
                        ") holds its output to json_object and json_schema; regex and choice are the native runtime's");
  }
  job->format.kind = f.type == Type::kJsonSchema   ? OutputFormat::Kind::kJsonSchema
                     : f.type == Type::kJsonObject ? OutputFormat::Kind::kJsonObject
                                                   : OutputFormat::Kind::kText;
  job->format.schema_name = std::move(f.name);
  job->format.schema_json = std::move(f.schema_json);
  return Status::Ok();
}

}  // namespace

StreamRelay::StreamRelay(ServedModel* model, StreamingGenerator* generator, natsConnection* nc,
                         queue::MsgReaper* reaper, BatchRunner* runner, const CancelledRequests* cancelled,
                         std::string worker_id, std::function<void()> on_free)
    : model_(model),
      gen_(generator),
      nc_(nc),
      reaper_(reaper),
      runner_(runner),
      cancelled_(cancelled),
      worker_id_(std::move(worker_id)),
      on_free_(std::move(on_free)) {
  sweeper_ = std::thread([this] { SweepLoop(); });
}

StreamRelay::~StreamRelay() { Stop(); }

void StreamRelay::Push(WorkItem item) {
  if (!item.work.payload_key.empty() && !runner_->Fetch(item)) {  // settled
    reaper_->Add(item.msg.release());
    return;
  }
  GenerationJob request;
  if (Status st = ToJob(item, *model_, &request); !st.ok()) {
    runner_->Settle(item, Outcome::kBadInput, st);
    reaper_->Add(item.msg.release());
    return;
  }
  if (!runner_->CheckLora(*model_, item)) {  // settled: back to the stream, or MODEL_NOT_FOUND
    reaper_->Add(item.msg.release());
    return;
  }
  auto job = std::make_shared<Job>();
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      runner_->Settle(item, stop_outcome_);
      reaper_->Add(item.msg.release());
      return;
    }
    job->key = next_++;
    jobs_[job->key] = job;
    ++stats_.running;
  }
  job->item = std::move(item);
  job->item.ticket.Start();
  job->started_at = SteadyClock::now();
  job->started_unix_us = UnixMicros();
  model_->items_run.fetch_add(1, std::memory_order_relaxed);
  const uint64_t handle = gen_->Start(std::move(request), [this, job](GenerationUpdate&& u) { OnUpdate(job, std::move(u)); });
  std::lock_guard lock(job->mu);
  job->handle = handle;
  job->started = true;
  if (job->verdict && !job->ended) gen_->Cancel(handle);  // the sweep decided before Start returned
}

void StreamRelay::OnUpdate(const std::shared_ptr<Job>& job, GenerationUpdate&& u) {
  std::unique_lock lock(job->mu);
  if (job->ended) return;
  const auto now = SteadyClock::now();
  // An update with text but no token ids (an upstream server streams text)
  // counts as one token: OpenAI-compatible servers send one per event.
  const size_t tokens = !u.token_ids.empty() ? u.token_ids.size() : !u.text.empty() ? 1 : 0;
  if (tokens) {
    if (job->generated == 0) job->first_token = now;
    job->last_token = now;
    job->generated += static_cast<uint32_t>(tokens);
    std::lock_guard stats(mu_);
    stats_.tokens_generated += tokens;
  }
  if (job->verdict) {  // cancelled or expired here: nobody wants more
    if (!u.final) return;
    job->ended = true;
    lock.unlock();
    return End(job, *job->verdict, Status::Ok());
  }
  if (!u.final) {
    Publish(*job, u);
    return;
  }
  job->ended = true;
  if (!u.status.ok()) {
    lock.unlock();
    // The job's fault (its prompt), the runtime gone (redelivered), or the model's.
    const Code code = u.status.code();
    const Outcome outcome = code == Code::kInvalidInput || code == Code::kModelNotFound ? Outcome::kBadInput
                            : code == Code::kNoCapacity                                 ? Outcome::kRuntimeLost
                            : code == Code::kModelLoadFailed                            ? Outcome::kLoadFailed
                                                                                        : Outcome::kInferenceFailed;
    const Status error = outcome == Outcome::kInferenceFailed ? Status(Code::kInferenceError, u.status.message())
                                                              : u.status;
    return End(job, outcome, error);
  }
  Publish(*job, u);
  lock.unlock();
  End(job, Outcome::kSucceeded, Status::Ok());
}

void StreamRelay::Publish(Job& job, GenerationUpdate& u) {
  wire::GenerationChunk c;
  c.text = std::move(u.text);
  c.token_ids = std::move(u.token_ids);
  c.logprobs = std::move(u.logprobs);
  if (u.final) {
    c.finish = u.finish_reason == "length" ? wire::FinishReason::kLength : wire::FinishReason::kStop;
    c.prompt_tokens = u.prompt_tokens;
    c.completion_tokens = u.completion_tokens;
    c.queue_ms = std::max<int64_t>(0, job.started_unix_us - job.item.enqueued_us) / 1000.0;
    c.ttft_ms = job.generated > 0 ? Millis(job.first_token - job.started_at) : 0;
    c.itl_ms = job.generated > 1 ? Millis(job.last_token - job.first_token) / (job.generated - 1) : 0;
  }
  PublishChunk(nc_, worker_id_, *model_, job.item, job.seq++, u.final, c, &job.reply);
}

void StreamRelay::End(const std::shared_ptr<Job>& job, Outcome outcome, const Status& error) {
  model_->last_batch_ns.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  if (outcome == Outcome::kSucceeded) {
    if (const ItemSpans* spans = runner_->spans(); spans && ItemSpans::Traced(job->item)) {
      spans->Generation(job->item, job->started_unix_us, job->started_at, job->first_token, job->last_token,
                        job->generated);
    }
    runner_->Complete(job->item);
  } else {
    runner_->Settle(job->item, outcome, error);
  }
  reaper_->Add(job->item.msg.release());
  {
    std::lock_guard lock(mu_);
    jobs_.erase(job->key);
    --stats_.running;
  }
  cv_.notify_all();
  if (on_free_) on_free_();
}

int64_t StreamRelay::FreeSlots() const {
  std::lock_guard lock(mu_);
  if (stopping_) return 0;
  return std::max<int64_t>(0, static_cast<int64_t>(gen_->max_sequences()) - static_cast<int64_t>(jobs_.size()));
}

SequenceEngine::Stats StreamRelay::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void StreamRelay::Stop(Outcome outcome) {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_outcome_ = outcome;
    }
    for (auto& [key, job] : jobs_) jobs.push_back(job);
  }
  cv_.notify_all();
  for (auto& job : jobs) {
    std::lock_guard lock(job->mu);
    if (job->ended || job->verdict) continue;
    job->verdict = outcome;
    if (job->started) gen_->Cancel(job->handle);
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return jobs_.empty(); });
  lock.unlock();
  if (sweeper_.joinable()) sweeper_.join();
}

void StreamRelay::SweepLoop() {
  const auto half_ack_wait = std::chrono::milliseconds(std::max<int64_t>(model_->spec->queue.ack_wait_ms / 2, 1));
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return stopping_; });
    if (stopping_) break;
    std::vector<std::shared_ptr<Job>> jobs;
    for (auto& [key, job] : jobs_) jobs.push_back(job);
    lock.unlock();
    const auto now = SteadyClock::now();
    const int64_t now_ms = UnixMillis();
    for (auto& job : jobs) {
      std::lock_guard job_lock(job->mu);
      if (job->ended || job->verdict) continue;
      WorkItem& it = job->item;
      if (it.work.deadline_unix_ms > 0 && now_ms >= it.work.deadline_unix_ms) {
        job->verdict = Outcome::kExpired;
      } else if (cancelled_ && cancelled_->Contains(it.work.request_id)) {
        job->verdict = Outcome::kCancelled;
      } else if (now - it.last_progress >= half_ack_wait) {
        runner_->Progress(it);
        it.last_progress = now;
      }
      if (job->verdict && job->started) gen_->Cancel(job->handle);
    }
    lock.lock();
  }
}

}  // namespace shoal::worker
