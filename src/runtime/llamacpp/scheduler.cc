#include "runtime/llamacpp/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "runtime/llamacpp/llamacpp_backend.h"

namespace shoal::llamacpp {
namespace {

// Physical batch: llama.cpp splits a step into micro-batches of this many.
constexpr uint32_t kMicroBatch = 512;

// An estimate of the KV cache's bytes (llama.cpp reports no figure): keys
// and values of every layer for every position, at `bytes` per value.
size_t KvBytes(const llama_model* model, size_t positions, size_t bytes) {
  const auto heads = static_cast<size_t>(std::max(1, llama_model_n_head(model)));
  const auto head_dim = static_cast<size_t>(llama_model_n_embd(model)) / heads;
  return positions * static_cast<size_t>(llama_model_n_layer(model)) * 2 * head_dim *
         static_cast<size_t>(llama_model_n_head_kv(model)) * bytes;
}

}  // namespace

Result<std::unique_ptr<Scheduler>> Scheduler::Create(const llama_model* model, const PromptBuilder* prompts,
                                                     Limits limits, std::unique_ptr<Threadpool> pool) {
  limits.batch_tokens = std::max(limits.batch_tokens, limits.sequences);
  llama_context_params p = llama_context_default_params();
  p.n_seq_max = limits.sequences;
  p.n_ctx = limits.sequences * limits.context;
  p.kv_unified = false;  // a stream per sequence: each may grow to its context
  p.n_batch = limits.batch_tokens;
  p.n_ubatch = std::min(limits.batch_tokens, kMicroBatch);
  p.n_threads = pool->threads();
  p.n_threads_batch = pool->threads();
  p.no_perf = true;
  // An F32 model keeps an F32 cache (its results then match a float
  // reference); the others llama.cpp's default F16.
  const bool f32 = llama_model_ftype(model) == LLAMA_FTYPE_ALL_F32;
  p.type_k = p.type_v = f32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
  p.flash_attn_type = f32 ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
  LogCapture capture;
  ContextPtr ctx(llama_init_from_model(const_cast<llama_model*>(model), p));
  if (!ctx) return Status(Code::kModelLoadFailed, "llama.cpp could not make a context: " + capture.Reason());
  llama_attach_threadpool(ctx.get(), pool->get(), pool->get());
  std::unique_ptr<Scheduler> s(new Scheduler(model, prompts, limits, std::move(pool), std::move(ctx)));
  s->memory_bytes_ = KvBytes(model, llama_n_ctx(s->ctx_.get()), f32 ? 4 : 2);
  s->thread_ = std::thread([p = s.get()] { p->Loop(); });
  return s;
}

Scheduler::Scheduler(const llama_model* model, const PromptBuilder* prompts, Limits limits,
                     std::unique_ptr<Threadpool> pool, ContextPtr ctx)
    : model_(model),
      vocab_(llama_model_get_vocab(model)),
      prompts_(prompts),
      limits_(limits),
      grammars_(vocab_),
      pool_(std::move(pool)),
      ctx_(std::move(ctx)),
      batch_(llama_batch_init(static_cast<int32_t>(limits.batch_tokens), 0, 1)),
      slots_(limits.sequences) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  llama_batch_free(batch_);
}

Result<std::vector<int32_t>> Scheduler::Prepare(const GenerationJob& job, SamplerPtr* format) {
  if (!job.lora.empty()) return InvalidInput("llamacpp runtime has no LoRA adapters");
  const int32_t vocab = llama_vocab_n_tokens(vocab_);
  for (int32_t id : job.stop_token_ids) {
    if (id < 0 || id >= vocab) {
      return InvalidInput("stop_token_ids: " + std::to_string(id) + " is not a token of this model");
    }
  }
  SHOAL_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, prompts_->Build(job));
  if (prompt.empty()) return InvalidInput("the prompt is empty");
  if (prompt.size() >= limits_.context) {
    return InvalidInput("the prompt is " + std::to_string(prompt.size()) + " tokens; the model's context is " +
                        std::to_string(limits_.context) + ", which leaves no room to generate");
  }
  SHOAL_ASSIGN_OR_RETURN(*format, grammars_.Get(job.format));
  return prompt;
}

uint64_t Scheduler::Start(GenerationJob job, Sink sink) {
  if (!sink) sink = [](GenerationUpdate&&) {};
  SamplerPtr format;
  auto prompt = Prepare(job, &format);
  uint64_t handle;
  bool queued = false;
  {
    std::lock_guard lock(mu_);
    handle = next_handle_++;
    if (prompt.ok() && !stopping_) {
      queued = true;
      live_.insert(handle);
      waiting_.push_back({handle, std::move(job), std::move(prompt).value(), std::move(format), std::move(sink)});
    }
  }
  if (!queued) {
    GenerationUpdate u;
    u.final = true;
    u.status = prompt.ok() ? Status(Code::kNoCapacity, "the llamacpp runtime is stopping") : prompt.status();
    sink(std::move(u));
    return handle;
  }
  wake_.notify_one();
  return handle;
}

void Scheduler::Cancel(uint64_t handle) {
  {
    std::lock_guard lock(mu_);
    if (!live_.count(handle)) return;
    cancels_.insert(handle);
  }
  wake_.notify_one();
}

std::vector<Scheduler::Waiting> Scheduler::Admit(std::set<uint64_t>* cancels) {
  cancels->swap(cancels_);
  for (size_t slot = 0; slot < slots_.size() && !waiting_.empty(); ++slot) {
    if (slots_[slot]) continue;
    Waiting w = std::move(waiting_.front());
    waiting_.pop_front();
    slots_[slot] = std::make_unique<Sequence>(w.handle, std::move(w.job), std::move(w.prompt), std::move(w.format),
                                              std::move(w.sink), vocab_, limits_.context);
    order_.push_back(slot);
  }
  // Jobs cancelled while waiting end without running.
  std::vector<Waiting> dropped;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!cancels->count(it->handle)) {
      ++it;
      continue;
    }
    live_.erase(it->handle);
    dropped.push_back(std::move(*it));
    it = waiting_.erase(it);
  }
  return dropped;
}

void Scheduler::EndWaiting(Waiting& w, Status status, std::string reason) {
  Sequence(w.handle, std::move(w.job), std::move(w.prompt), nullptr, std::move(w.sink), vocab_, limits_.context)
      .End(std::move(status), std::move(reason));
}

void Scheduler::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !cancels_.empty() || !order_.empty(); });
    if (stopping_) break;
    std::set<uint64_t> cancels;
    std::vector<Waiting> dropped = Admit(&cancels);
    lock.unlock();
    for (Waiting& w : dropped) EndWaiting(w, Status::Ok(), "cancelled");
    for (size_t i = 0; i < order_.size();) {
      const size_t slot = order_[i];
      if (cancels.count(slots_[slot]->handle())) {
        slots_[slot]->End(Status::Ok(), "cancelled");
        Release(slot);  // removes order_[i]
      } else {
        ++i;
      }
    }
    if (!order_.empty()) Step();
    lock.lock();
  }
  // Draining: whatever has not ended ends now.
  const Status gone(Code::kNoCapacity, "the llamacpp runtime is stopping");
  std::deque<Waiting> waiting = std::move(waiting_);
  lock.unlock();
  while (!order_.empty()) {
    slots_[order_.front()]->End(gone, "");
    Release(order_.front());
  }
  for (Waiting& w : waiting) EndWaiting(w, gone, "");
}

std::vector<Scheduler::Chunk> Scheduler::Plan(uint32_t budget) {
  std::vector<Chunk> plan;
  batch_.n_tokens = 0;
  // Decoding sequences (one token each) first, then prompts in admission order.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t slot : order_) {
      const Sequence& s = *slots_[slot];
      const bool decoding = s.uncached() == 1;
      if (decoding != (pass == 0) || budget == 0) continue;
      const uint32_t n = std::min(s.uncached(), budget);
      for (uint32_t k = 0; k < n; ++k) {
        const int32_t t = batch_.n_tokens++;
        batch_.token[t] = s.next_tokens()[k];
        batch_.pos[t] = static_cast<llama_pos>(s.cached() + k);
        batch_.n_seq_id[t] = 1;
        batch_.seq_id[t][0] = static_cast<llama_seq_id>(slot);
        batch_.logits[t] = 0;
      }
      const bool logits = n == s.uncached();  // its last token: the next one is sampled
      if (logits) batch_.logits[batch_.n_tokens - 1] = 1;
      plan.push_back({slot, n, logits});
      budget -= n;
    }
  }
  return plan;
}

void Scheduler::Step() {
  uint32_t budget = limits_.batch_tokens;
  std::vector<Chunk> plan;
  int32_t rc = 0;
  LogCapture capture;
  while (true) {
    plan = Plan(budget);
    rc = llama_decode(ctx_.get(), batch_);
    // 1: no room in the cache for the whole step (the cache is unchanged):
    // try a smaller one. Cannot happen while each sequence stays within its
    // own stream, but must not hang a job if it does.
    if (rc != 1 || batch_.n_tokens <= 1) break;
    budget = static_cast<uint32_t>(batch_.n_tokens) / 2;
  }
  if (rc != 0) {
    const Status failed(Code::kInferenceError, "llama.cpp failed a decoding step (" + std::to_string(rc) +
                                                   "): " + capture.Reason());
    spdlog::warn("llamacpp: {}", failed.message());
    for (const Chunk& c : plan) {
      slots_[c.slot]->End(failed, "");
      Release(c.slot);
    }
    return;
  }
  int32_t row = 0;
  for (const Chunk& c : plan) {
    row += static_cast<int32_t>(c.n);
    Sequence& s = *slots_[c.slot];
    s.Cached(c.n);
    if (c.logits && s.Sample(ctx_.get(), row - 1)) Release(c.slot);
  }
}

void Scheduler::Release(size_t slot) {
  llama_memory_seq_rm(llama_get_memory(ctx_.get()), static_cast<llama_seq_id>(slot), -1, -1);
  const uint64_t handle = slots_[slot]->handle();
  slots_[slot].reset();
  std::erase(order_, slot);
  std::lock_guard lock(mu_);
  live_.erase(handle);
}

}  // namespace shoal::llamacpp
