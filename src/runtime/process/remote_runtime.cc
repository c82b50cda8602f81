#include "runtime/process/remote_runtime.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "common/log.h"
#include "runtime/process/protocol.h"
#include "runtime/process/token_feed.h"

namespace shoal::runtime_process {
namespace {

// Handles are unique within this worker: the model's id and a number.
std::string NewHandle(const std::string& id) {
  static std::atomic<uint64_t> next{1};
  return id + "#" + std::to_string(next.fetch_add(1));
}

// Sends a load of `config` under `handle` and waits for its end.
Result<LoadResult> LoadInto(RuntimeClient& client, const std::string& handle, const ModelConfig& config,
                            int threads, const std::function<void(double)>& progress,
                            std::chrono::milliseconds timeout) {
  const uint64_t id = client.NextId();
  auto reply = client.Call(id, LoadRequest(id, handle, config, threads), timeout, progress);
  if (!reply.ok()) return reply.status();
  LoadResult loaded;
  if (Status s = ReadLoadResult(reply->ok(), &loaded); !s.ok()) {
    return Internal("malformed load reply: " + s.message());
  }
  return loaded;
}

// A generation under way in the runtime process: where it was sent, and
// the sink, told once at the end (the reader thread and a breaking
// connection may both try).
struct RemoteJob {
  std::mutex mu;
  StreamingGenerator::Sink sink;  // guarded by mu; empty once the final update went
  // Not owned: a client must not outlive its process's supervision (the
  // last reference would be dropped on its own reader thread).
  std::weak_ptr<RuntimeClient> client;
  uint64_t request_id = 0;

  void Tell(GenerationUpdate&& u) {
    std::lock_guard lock(mu);
    if (!sink) return;
    const bool final = u.final;
    sink(std::move(u));
    if (final) sink = nullptr;
  }
  void Fail(const Status& s) {
    GenerationUpdate u;
    u.final = true;
    u.status = s;
    Tell(std::move(u));
  }
};

class RemoteModel : public Model, public StreamingGenerator {
 public:
  // `feed`: the tokenizing for a runtime that takes tokens; else null.
  RemoteModel(std::shared_ptr<RuntimeProcess> process, CallTimeouts timeouts, ModelConfig config, int threads,
              std::string handle, Connected loaded_in, uint64_t bytes, std::unique_ptr<TokenFeed> feed)
      : process_(std::move(process)),
        timeouts_(timeouts),
        config_(std::move(config)),
        threads_(threads),
        handle_(std::move(handle)),
        bytes_(bytes),
        feed_(std::move(feed)),
        generation_(loaded_in.generation) {}

  ~RemoteModel() override {
    // Unloaded from the process it is in, if that still runs (a process
    // is never started for this).
    auto c = process_->Current();
    if (c && c->generation == generation_) {
      const uint64_t id = c->client->NextId();
      (void)c->client->Call(id, UnloadRequest(id, handle_), timeouts_.call);
    }
    process_->Releases(handle_);
  }

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return bytes_; }

  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override {
    if (feed_) {
      const TokenFeed::Batch b = feed_->Encode(in, out);
      return Batch(
          std::span(b.inputs), out,
          [&](uint64_t id) { return TokenBatchRequest(id, Task::kEncode, handle_, b.inputs); },
          [&](std::string_view ok) { return TokenFeed::ReadEncode(ok, b, out); });
    }
    return Batch(
        in, out, [&](uint64_t id) { return EncodeRequest(id, handle_, in); },
        [&](std::string_view ok) { return ReadEncodeOutputs(ok, out); });
  }
  Status Score(std::span<const ScoreInput> in, std::span<ScoreOutput> out) override {
    if (feed_) {
      const TokenFeed::Batch b = feed_->Score(in, out);
      return Batch(
          std::span(b.inputs), out,
          [&](uint64_t id) { return TokenBatchRequest(id, Task::kScore, handle_, b.inputs); },
          [&](std::string_view ok) { return TokenFeed::ReadScore(ok, b, out); });
    }
    return Batch(
        in, out, [&](uint64_t id) { return ScoreRequest(id, handle_, in); },
        [&](std::string_view ok) { return ReadScoreOutputs(ok, out); });
  }
  Status Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) override {
    // A runtime that takes token ids has no extract of its own yet.
    if (feed_) return Model::Extract(in, out);
    return Batch(
        in, out, [&](uint64_t id) { return ExtractRequest(id, handle_, in); },
        [&](std::string_view ok) { return ReadExtractOutputs(ok, out); });
  }
  Status Run(std::span<const Tensor> inputs, RunOutputs what, std::vector<Tensor>* outputs) override {
    if (!config_.graph) return Model::Run(inputs, what, outputs);
    auto c = Ready();
    if (!c.ok()) return c.status();
    const uint64_t id = c->client->NextId();
    auto reply = c->client->Call(id, RunRequest(id, handle_, inputs, what), timeouts_.call);
    if (!reply.ok()) return reply.status();
    outputs->clear();
    if (Status s = ReadRunOutputs(reply->ok(), what, outputs); !s.ok()) {
      process_->Kill(c->generation, "protocol", "its reply to a run does not fit: " + s.message());
      return RuntimeGone(s.message());
    }
    return Status::Ok();
  }
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override {
    if (feed_) return feed_->Tokenize(in, out);
    return Batch(
        in, out, [&](uint64_t id) { return TokenizeRequest(id, handle_, in); },
        [&](std::string_view ok) { return ReadTokenizeOutputs(ok, out); });
  }

  StreamingGenerator* streaming_generator() override {
    return config_.task == Task::kGenerate ? this : nullptr;
  }
  uint32_t max_sequences() const override { return std::max<uint32_t>(config_.max_batch_requests, 1); }

  uint64_t Start(GenerationJob job, Sink sink) override {
    auto j = std::make_shared<RemoteJob>();
    j->sink = std::move(sink);
    const uint64_t handle = next_job_.fetch_add(1);
    auto c = Ready();
    if (!c.ok()) {
      j->Fail(c.status());
      return handle;
    }
    // A runtime that does not know a field would ignore it: only what its
    // hello listed is sent.
    const RuntimeHello hello = process_->last_hello();
    if (job.format.kind != OutputFormat::Kind::kText) {
      const std::string_view want = FormatName(job.format.kind);
      if (std::find(hello.formats.begin(), hello.formats.end(), want) == hello.formats.end()) {
        j->Fail(InvalidInput("response_format: runtime '" + hello.runtime + "' cannot hold its output to " +
                             std::string(want)));
        return handle;
      }
    }
    if (const std::string missing = FirstUnapplied(job.adjustments, hello.adjustments); !missing.empty()) {
      j->Fail(InvalidInput(missing + ": runtime '" + hello.runtime + "' does not apply it"));
      return handle;
    }
    j->client = c->client;
    j->request_id = c->client->NextId();
    {
      std::lock_guard lock(jobs_mu_);
      jobs_[handle] = j;
    }
    const uint64_t generation = c->generation;
    auto on_chunk = [this, j, generation](std::string_view raw) {
      GenerationUpdate u;
      if (Status s = ReadChunk(raw, &u); !s.ok()) {
        process_->Kill(generation, "protocol", "a malformed generation chunk: " + s.message());
        return;  // the broken connection ends the job
      }
      j->Tell(std::move(u));
    };
    auto on_end = [this, j, handle, generation](Result<OkReply> reply) {
      {
        std::lock_guard lock(jobs_mu_);
        jobs_.erase(handle);
      }
      if (!reply.ok()) return j->Fail(reply.status());
      GenerationUpdate u;
      u.final = true;
      if (Status s = ReadFinish(reply->ok(), &u); !s.ok()) {
        process_->Kill(generation, "protocol", "a malformed end of a generation: " + s.message());
        return j->Fail(RuntimeGone(s.message()));
      }
      j->Tell(std::move(u));
    };
    c->client->Start(j->request_id, GenerateJobRequest(j->request_id, handle_, job), std::move(on_chunk),
                     std::move(on_end));
    return handle;
  }

  void Cancel(uint64_t handle) override {
    std::shared_ptr<RemoteJob> j;
    {
      std::lock_guard lock(jobs_mu_);
      auto it = jobs_.find(handle);
      if (it == jobs_.end()) return;
      j = it->second;
    }
    // The runtime ends the job with "cancelled"; its ok needs no waiting.
    auto client = j->client.lock();
    if (!client) return;  // its process is gone, and the job with it
    const uint64_t id = client->NextId();
    client->Start(id, CancelRequest(id, j->request_id), {}, [](Result<OkReply>) {});
  }

  Status UpdateLoras(std::span<const LoraConfig> loras) override {
    auto c = Ready();
    if (!c.ok()) {
      // Kept: the next load into a new process sends it.
      std::lock_guard lock(mu_);
      loras_.assign(loras.begin(), loras.end());
      return Status::Ok();
    }
    const uint64_t id = c->client->NextId();
    auto reply = c->client->Call(id, LorasRequest(id, handle_, loras), timeouts_.call);
    if (!reply.ok() && reply.status().code() != Code::kNoCapacity) return reply.status();
    std::lock_guard lock(mu_);
    loras_.assign(loras.begin(), loras.end());
    return Status::Ok();
  }

 private:
  // The connection to a process that holds this model, loading it again
  // into a process started since it was loaded.
  Result<Connected> Ready() {
    std::lock_guard lock(mu_);
    auto c = process_->Connect();
    if (!c.ok()) return c.status();
    if (c->generation == generation_) return c;
    spdlog::info("runtime {}: loading {} again into its new process", process_->name(), config_.id);
    auto loaded = LoadInto(*c->client, handle_, config_, threads_, {}, timeouts_.load);
    if (!loaded.ok()) {
      if (loaded.status().code() == Code::kNoCapacity) return loaded.status();
      return Status(Code::kModelLoadFailed, config_.id + " did not load again: " + loaded.status().message());
    }
    if (!loras_.empty()) {
      const uint64_t id = c->client->NextId();
      auto r = c->client->Call(id, LorasRequest(id, handle_, loras_), timeouts_.call);
      if (!r.ok()) return r.status();
    }
    process_->Holds(handle_, loaded->memory_bytes);
    generation_ = c->generation;
    return c;
  }

  // Sends the request `make` writes for the inputs `in` (none: nothing is
  // sent) and reads its reply into `out`.
  template <class In, class Out, class MakeRequest, class ReadOutputs>
  Status Batch(std::span<const In> in, std::span<Out> out, MakeRequest make, ReadOutputs read) {
    if (in.empty()) return Status::Ok();
    auto c = Ready();
    if (!c.ok()) return c.status();
    const uint64_t id = c->client->NextId();
    auto reply = c->client->Call(id, make(id), timeouts_.call);
    if (!reply.ok()) return reply.status();
    if (Status s = read(reply->ok()); !s.ok()) {
      process_->Kill(c->generation, "protocol", "its reply to a batch does not fit the request: " + s.message());
      return RuntimeGone(s.message());
    }
    return Status::Ok();
  }

  const std::shared_ptr<RuntimeProcess> process_;
  const CallTimeouts timeouts_;
  const ModelConfig config_;
  const int threads_;
  const std::string handle_;
  const uint64_t bytes_;
  const std::unique_ptr<TokenFeed> feed_;
  std::mutex mu_;  // guards generation_ and loras_; held across a reload, so one thread reloads
  uint64_t generation_;
  std::vector<LoraConfig> loras_;
  std::atomic<uint64_t> next_job_{1};
  std::mutex jobs_mu_;  // guards jobs_
  std::map<uint64_t, std::shared_ptr<RemoteJob>> jobs_;  // generations under way, by handle
};

}  // namespace

RemoteRuntime::RemoteRuntime(std::string name, std::shared_ptr<RuntimeProcess> process, CallTimeouts timeouts)
    : name_(std::move(name)), process_(std::move(process)), timeouts_(timeouts) {}

Result<std::unique_ptr<Model>> RemoteRuntime::Load(const ModelConfig& config, const LoadContext& ctx) {
  const std::string handle = NewHandle(config.id);
  // Twice: a process that stopped as its last model left refuses new work.
  for (int attempt = 0;; ++attempt) {
    auto c = process_->Connect();
    if (!c.ok()) return c.status();
    if (config.graph && !process_->last_hello().graphs) {
      process_->StopIfIdle();
      return InvalidInput("runtime '" + name_ + "' runs no bare graphs (its hello does not say \"graphs\")");
    }
    std::unique_ptr<TokenFeed> feed;
    if (process_->last_hello().takes_tokens && !config.graph) {  // a graph's inputs are tensors
      auto opened = TokenFeed::Open(config);
      if (!opened.ok()) {
        process_->StopIfIdle();
        return opened.status();
      }
      feed = std::move(opened).value();
    }
    auto loaded = LoadInto(*c->client, handle, config, ctx.threads, ctx.progress, timeouts_.load);
    if (!loaded.ok() && loaded.status().code() == Code::kNoCapacity && attempt == 0) continue;
    if (!loaded.ok()) {
      process_->StopIfIdle();  // a process started for this load holds nothing
      return loaded.status();
    }
    if (feed) feed->CapTokens(loaded->max_tokens);
    process_->Holds(handle, loaded->memory_bytes);
    return std::unique_ptr<Model>(new RemoteModel(process_, timeouts_, config, ctx.threads, handle, *c,
                                                  loaded->memory_bytes, std::move(feed)));
  }
}

std::vector<Task> RemoteRuntime::tasks() const {
  RuntimeHello hello = process_->last_hello();
  // Shoal tokenizes for a runtime that takes tokens, so its models tokenize.
  const bool listed = std::find(hello.tasks.begin(), hello.tasks.end(), Task::kTokenize) != hello.tasks.end();
  if (hello.takes_tokens && !listed) hello.tasks.push_back(Task::kTokenize);
  return hello.tasks;
}

Result<uint64_t> RemoteRuntime::CheckLora(const ModelConfig& base, const LoraConfig& lora) {
  auto c = process_->Connect();
  if (!c.ok()) return c.status();
  const uint64_t id = c->client->NextId();
  auto reply = c->client->Call(id, CheckLoraRequest(id, base, lora), timeouts_.load);
  process_->StopIfIdle();
  if (!reply.ok()) return reply.status();
  uint64_t bytes = 0;
  SHOAL_RETURN_IF_ERROR(ReadBytes(reply->ok(), &bytes));
  return bytes;
}

}  // namespace shoal::runtime_process
