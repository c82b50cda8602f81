#include "worker/generation_engine.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "queue/message.h"
#include "runtime/logit_adjustments.h"
#include "runtime/structured/output_constraint.h"
#include "runtime/structured/tool_calls.h"
#include "runtime/text_stream.h"
#include "wire/generate.h"
#include "wire/work_message.h"
#include "worker/generation_inputs.h"
#include "worker/generation_reply.h"
#include "worker/generation_sequence.h"
#include "worker/model_drafter.h"
#include "worker/ngram_drafter.h"
#include "worker/priority_line.h"

namespace shoal::worker {

GenerationEngine::GenerationEngine(ServedModel* model, Generator* generator, Generator* draft, natsConnection* nc,
                                   queue::MsgReaper* reaper, BatchRunner* runner, const CancelledRequests* cancelled,
                                   std::string worker_id, int threads, std::function<void()> on_free)
    : model_(model),
      gen_(generator),
      nc_(nc),
      reaper_(reaper),
      runner_(runner),
      cancelled_(cancelled),
      worker_id_(std::move(worker_id)),
      threads_(std::max(1, threads)),
      on_free_(std::move(on_free)),
      max_running_(std::max<uint32_t>(1, model->spec->batching.max_batch_requests)),
      step_tokens_(std::max<uint32_t>(1, model->spec->batching.max_batch_tokens)),
      blocks_(generator->info().kv_blocks, generator->info().kv_block_tokens),
      draft_k_(model->spec->speculative.k),
      grammars_([generator] {
        std::vector<std::string> bytes(generator->info().vocab_size);
        for (size_t id = 0; id < bytes.size(); ++id) bytes[id] = generator->TokenBytes(static_cast<int32_t>(id));
        return bytes;
      }) {
  stats_.kv_blocks_free = blocks_.available();
  stats_.kv_blocks_total = blocks_.total();
  if (model->spec->speculative.ngram()) {
    drafter_ = std::make_unique<NgramDrafter>();
  } else if (draft) {
    drafter_ = std::make_unique<ModelDrafter>(draft);
  }
  thread_ = std::thread([this] { Loop(); });
}

GenerationEngine::~GenerationEngine() { Stop(); }

void GenerationEngine::Push(WorkItem item) {
  auto s = std::make_unique<Sequence>();
  s->item = std::move(item);
  {
    std::lock_guard lock(mu_);
    // Interactive sequences start before batch-class ones.
    const auto at = PlaceInLine(waiting_, s->item.priority, /*head=*/false, PriorityOf);
    waiting_.insert(at, std::move(s));
  }
  cv_.notify_one();
}

int64_t GenerationEngine::FreeSlots() const {
  std::lock_guard lock(mu_);
  if (stop_) return 0;
  // A new sequence needs room for a prompt: with fewer than a few blocks
  // left it would only wait here, where no other worker can take it.
  const int64_t min_blocks = 4;
  if (stats_.kv_blocks_free < min_blocks) return 0;
  return std::max<int64_t>(0, static_cast<int64_t>(max_running_) - stats_.running -
                                  static_cast<int64_t>(waiting_.size()));
}

int64_t GenerationEngine::FreeInteractiveSlots() const {
  std::lock_guard lock(mu_);
  if (stop_) return 0;
  if (running_batch_ == 0 && stats_.kv_blocks_free < 4) return 0;  // as FreeSlots
  const auto waiting_interactive = std::count_if(waiting_.begin(), waiting_.end(), [](const auto& w) {
    return w->item.priority == queue::Priority::kInteractive;
  });
  return std::max<int64_t>(0, static_cast<int64_t>(max_running_) - (stats_.running - running_batch_) -
                                  static_cast<int64_t>(waiting_interactive));
}

GenerationEngine::Stats GenerationEngine::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.waiting = static_cast<int64_t>(waiting_.size());
  return s;
}

void GenerationEngine::Stop(Outcome outcome) {
  {
    std::lock_guard lock(mu_);
    if (!stop_) {
      stop_ = true;
      stop_outcome_ = outcome;
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GenerationEngine::Loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (running_.empty()) {
        cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return stop_ || !waiting_.empty(); });
      }
      if (stop_) break;
    }
    Sweep(SteadyClock::now());
    Admit();
    if (!running_.empty()) Step();
    std::lock_guard lock(mu_);
    MirrorLocked();
  }
  // Stopping: nothing more runs; everything here goes back or is answered.
  Outcome outcome;
  std::deque<std::unique_ptr<Sequence>> waiting;
  {
    std::lock_guard lock(mu_);
    outcome = stop_outcome_;
    waiting.swap(waiting_);
  }
  for (auto& s : waiting) runner_->Settle(s->item, outcome);
  while (!running_.empty()) Finish(running_.size() - 1, outcome);
}

bool GenerationEngine::Prepare(Sequence& s) {
  WorkItem& it = s.item;
  auto fail = [&](const Status& st) {
    runner_->Settle(it, Outcome::kBadInput, st);
    return false;
  };
  if (it.work.task != Task::kGenerate) {
    return fail(InvalidInput("model '" + model_->spec->id + "' generates; task '" +
                             std::string(TaskName(it.work.task)) + "' is not supported"));
  }
  if (!runner_->CheckLora(*model_, it)) return false;  // settled: back to the stream, or MODEL_NOT_FOUND
  if (!it.work.payload_key.empty() && !runner_->Fetch(it)) return false;  // settled
  wire::GenerateRequest req;
  if (Status st = wire::DecodeGenerateWork(it.payload, &req); !st.ok()) return fail(st);
  if (req.response_format.type != wire::ResponseFormat::Type::kText) {
    std::string field;
    auto gbnf = FormatGrammar(req.response_format, &field);
    if (!gbnf.ok()) return fail(gbnf.status());
    auto grammar = grammars_.Get(*gbnf, field);
    if (!grammar.ok()) return fail(grammar.status());
    s.format = std::make_unique<structured::OutputConstraint>(std::move(grammar).value());
  }
  if (!req.tools_json.empty() && req.tool_choice.kind != wire::ToolChoice::Kind::kNone) {
    if (Status st = PrepareToolCalls(s, req); !st.ok()) return fail(st);
  }
  const bool chat = req.kind == wire::GenerateRequest::Kind::kChat;
  std::string rendered;
  if (chat) {
    auto r = gen_->RenderChat(Turns(req.messages), req.add_generation_prompt,
                              TemplateKwargs(req.chat_template_kwargs_json, req.tools_json));
    if (!r.ok()) return fail(r.status());
    rendered = std::move(r).value();
  }
  auto ids = gen_->EncodePrompt(chat ? std::string_view(rendered) : std::string_view(req.prompt), !chat);
  if (!ids.ok()) return fail(ids.status());
  s.prefix_key = it.work.lora;
  if (const std::vector<RequestImage> images = Images(req.messages); !images.empty()) {
    if (Status st = PlaceImages(s, images, &*ids); !st.ok()) return fail(st);
  }
  const GeneratorInfo& info = gen_->info();
  const size_t n = ids->size();
  if (n == 0) return fail(InvalidInput("the prompt is empty"));
  if (n >= info.max_context) {
    return fail(InvalidInput("the prompt is " + std::to_string(n) + " tokens; the model's context is " +
                             std::to_string(info.max_context) + ", which leaves no room to generate"));
  }
  if (req.sampling.max_tokens > 0 && n + req.sampling.max_tokens > info.max_context) {
    return fail(InvalidInput("the prompt (" + std::to_string(n) + " tokens) plus max_tokens (" +
                             std::to_string(req.sampling.max_tokens) + ") exceeds the model's context of " +
                             std::to_string(info.max_context) + " tokens"));
  }
  for (int32_t id : req.sampling.stop_token_ids) {
    if (id < 0 || static_cast<size_t>(id) >= info.vocab_size) {
      return fail(InvalidInput("stop_token_ids: " + std::to_string(id) + " is not a token of this model"));
    }
  }
  ApplySamplingDefaults(info.sampling_defaults, &req.sampling);
  const wire::SamplingParams& p = req.sampling;
  for (auto [id, bias] : p.logit_bias) {
    if (static_cast<size_t>(id) >= info.vocab_size) {
      return fail(InvalidInput("logit_bias." + std::to_string(id) + ": not a token of this model (" +
                               std::to_string(info.vocab_size) + " tokens)"));
    }
  }
  s.tokens = std::move(ids).value();
  s.prompt_len = static_cast<uint32_t>(n);
  if (p.adjusts_logits()) {
    s.penalties = std::make_unique<TokenPenalties>(
        LogitAdjustments{.presence_penalty = p.presence_penalty,
                         .frequency_penalty = p.frequency_penalty,
                         .repetition_penalty = p.repetition_penalty,
                         .logit_bias = p.logit_bias,
                         .min_tokens = p.min_tokens},
        s.tokens);
  }
  s.max_new = req.sampling.max_tokens > 0 ? req.sampling.max_tokens : info.max_context - s.prompt_len;
  s.seed = SequenceSeed(req.sampling.seed, it.work.request_id, it.work.item);
  s.sampler = gen_->NewSampler(
      {.temperature = req.sampling.temperature, .top_p = req.sampling.top_p, .top_k = req.sampling.top_k}, s.seed);
  s.text = std::make_unique<TextStream>(req.sampling.stop);
  if (!req.sampling.ignore_eos) s.stop_ids.insert(info.eos_ids.begin(), info.eos_ids.end());
  s.stop_ids.insert(req.sampling.stop_token_ids.begin(), req.sampling.stop_token_ids.end());
  s.logprobs = req.sampling.logprobs;
  s.top_logprobs = req.sampling.top_logprobs;
  s.prepared = true;
  return true;
}

bool GenerationEngine::Paused(const Sequence& s) const {
  return batch_paused_ && s.item.priority == queue::Priority::kBatch;
}

void GenerationEngine::Step() {
  // Every sequence that is decoding needs a block for its next position;
  // when there is none, the youngest sequence steps aside (Preempt) — the
  // youngest batch-class one, when one is left to grow.
  for (size_t i = 0; i < running_.size();) {
    Sequence& s = *running_[i];
    if (blocks_.Grow(&s.table, static_cast<uint32_t>(s.tokens.size()))) {
      ++i;
      continue;
    }
    size_t victim = running_.size() - 1;  // possibly this one
    for (size_t k = running_.size(); k-- > i;) {
      if (running_[k]->item.priority == queue::Priority::kBatch) {
        victim = k;
        break;
      }
    }
    Preempt(victim);
  }
  if (running_.empty()) return;

  // While interactive sequences run, batch-class ones wait (they keep their
  // blocks): their rows would slow every interactive step.
  batch_paused_ = std::any_of(running_.begin(), running_.end(),
                              [](const auto& r) { return r->item.priority == queue::Priority::kInteractive; });

  // Decoding sequences first (one token each, and their drafts), then
  // prompt chunks within what is left of the step's token budget.
  uint32_t budget = step_tokens_;
  size_t decoding = 0;
  for (const auto& s : running_) decoding += !Paused(*s) && s->tokens.size() - s->computed == 1 ? 1 : 0;
  // Drafts fill what a step can take at the cost of one row, no more.
  const size_t flat = std::min<size_t>(budget, gen_->info().flat_cost_rows);
  if (drafter_ && flat > decoding) Draft(static_cast<uint32_t>(flat - decoding));
  std::vector<SequenceChunk> chunks;
  std::vector<size_t> owner;  // running_ index per chunk
  for (int pass = 0; pass < 2 && budget > 0; ++pass) {
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
      Sequence& s = *running_[i];
      const uint32_t remaining = static_cast<uint32_t>(s.tokens.size()) - s.computed;
      if ((pass == 0) != (remaining == 1) || Paused(s)) continue;
      if (!s.drafted.empty()) {  // its last token and the drafts, a row of logits after each
        s.feed.assign(1, s.tokens.back());
        s.feed.insert(s.feed.end(), s.drafted.begin(), s.drafted.end());
        budget -= std::min<uint32_t>(budget, static_cast<uint32_t>(s.feed.size()));
        chunks.push_back({.tokens = s.feed,
                          .start = s.computed,
                          .blocks = s.table,
                          .logit_rows = static_cast<uint32_t>(s.feed.size()),
                          .lora = s.item.work.lora,
                          .embeddings = s.placed});
        owner.push_back(i);
        continue;
      }
      const uint32_t n = std::min(remaining, budget);
      budget -= n;
      chunks.push_back({.tokens = std::span<const int32_t>(s.tokens).subspan(s.computed, n),
                        .start = s.computed,
                        .blocks = s.table,
                        .logit_rows = s.computed + n == s.tokens.size() ? 1u : 0u,
                        .lora = s.item.work.lora,
                        .embeddings = s.placed});
      owner.push_back(i);
    }
  }
  size_t rows = 0;
  for (const SequenceChunk& c : chunks) rows += c.logit_rows;
  const size_t vocab = gen_->info().vocab_size;
  logits_.resize(std::max<size_t>(1, rows) * vocab);
  const Status st = gen_->Forward(chunks, logits_.data(), threads_);
  model_->last_batch_ns.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    ++stats_.steps;
  }

  std::vector<size_t> done;  // running_ indices to finish, with outcomes below
  std::vector<std::pair<Outcome, Status>> outcomes;
  const float* row = logits_.data();
  const auto now = SteadyClock::now();
  uint64_t taken = 0, drafted = 0, accepted = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    Sequence& s = *running_[owner[k]];
    if (!st.ok()) {
      done.push_back(owner[k]);
      outcomes.emplace_back(Outcome::kInferenceFailed, Status(Code::kInferenceError, st.message()));
      continue;
    }
    // Of a speculative chunk only the last token's position is certain;
    // each accepted draft below adds its own.
    s.computed += s.drafted.empty() ? static_cast<uint32_t>(chunks[k].tokens.size()) : 1;
    wire::FinishReason finish = wire::FinishReason::kNone;
    Status failed;
    uint32_t kept_drafts = 0;
    // Row j follows the j-th token of the chunk's tail: it checks draft j,
    // or (after the last draft, or for a plain chunk) picks freely.
    for (uint32_t j = 0; j < chunks[k].logit_rows; ++j, row += vocab) {
      float logprob = 0;
      const bool checks = j < s.drafted.size();
      DraftCheck draft;
      if (checks) draft = {s.drafted[j], s.drafted_q.empty() ? &kCertainDraft : &s.drafted_q[j]};
      auto picked = Pick(s, row, s.logprobs ? &logprob : nullptr, checks ? &draft : nullptr);
      const bool kept = checks && draft.accepted;
      if (!picked.ok()) {
        failed = picked.status();
        row += vocab * (chunks[k].logit_rows - j);
        break;
      }
      finish = Take(s, *picked, logprob, row, now);
      ++taken;
      if (kept) {
        ++kept_drafts;
        ++s.computed;  // the draft's keys and values were right
      }
      if (finish != wire::FinishReason::kNone || (checks && !kept)) {
        row += vocab * (chunks[k].logit_rows - j);
        break;
      }
    }
    if (!s.drafted.empty()) {
      s.draft.acceptance = 0.7 * s.draft.acceptance + 0.3 * kept_drafts / s.drafted.size();
      drafter_->Rewind(&s.draft, s.computed);
      drafted += s.drafted.size();
      accepted += kept_drafts;
      s.drafted.clear();
      s.drafted_q.clear();
    }
    blocks_.Publish(s.tokens, s.prefix_key, s.computed, s.table, &s.published);
    if (!failed.ok()) {
      done.push_back(owner[k]);
      outcomes.emplace_back(Outcome::kInferenceFailed, failed);
    } else if (finish != wire::FinishReason::kNone) {
      s.pending.finish = finish;  // the final chunk goes out in Finish
      EndText(s);                 // may find tool calls, and say so
      done.push_back(owner[k]);
      outcomes.emplace_back(Outcome::kSucceeded, Status::Ok());
    } else if (!s.pending.text.empty() || !s.pending.token_ids.empty()) {
      Emit(s, false);
    }
  }
  if (drafted > 0 && model_->metrics) {
    model_->metrics->drafts_accepted->Inc(static_cast<double>(accepted));
    model_->metrics->drafts_rejected->Inc(static_cast<double>(drafted - accepted));
  }
  {
    std::lock_guard lock(mu_);
    stats_.tokens_generated += taken;
    stats_.drafted_tokens += drafted;
    stats_.accepted_tokens += accepted;
  }
  // Highest index first, so the others stay valid.
  std::vector<size_t> order(done.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return done[a] > done[b]; });
  for (size_t i : order) Finish(done[i], outcomes[i].first, outcomes[i].second);
  if (!done.empty() && on_free_) on_free_();
}

wire::FinishReason GenerationEngine::Take(Sequence& s, int32_t token, float logprob, const float* row,
                                          SteadyClock::time_point now) {
  if (s.generated() == 0) s.first_token = now;
  s.last_token = now;
  s.tokens.push_back(token);
  s.pending.token_ids.push_back(token);
  if (s.logprobs) s.pending.logprobs.push_back(logprob);
  if (s.top_logprobs > 0) s.pending.top_logprobs.push_back(MostLikely(row, s.top_logprobs));
  if (s.stop_ids.count(token)) return wire::FinishReason::kStop;  // its text (an end marker) is not output
  std::string text = s.text->Push(gen_->TokenBytes(token));
  s.pending.text += s.tool_calls ? s.tool_calls->Push(text) : text;
  if (s.text->stopped() || (s.format && s.format->complete())) return wire::FinishReason::kStop;
  if (s.generated() >= s.max_new || s.tokens.size() >= gen_->info().max_context) return wire::FinishReason::kLength;
  return wire::FinishReason::kNone;
}

std::vector<wire::TopLogprob> GenerationEngine::MostLikely(const float* logits, uint32_t n) {
  const size_t vocab = gen_->info().vocab_size;
  n = static_cast<uint32_t>(std::min<size_t>(n, vocab));
  ranked_.resize(vocab);
  for (size_t i = 0; i < vocab; ++i) ranked_[i] = static_cast<int32_t>(i);
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(ranked_.begin(), ranked_.begin() + n, ranked_.end(), by_logit);
  const float max_logit = logits[ranked_[0]];
  // The model's own log-probabilities: log-softmax of the raw logits.
  const float log_z = max_logit - TokenLogProb(logits, vocab, ranked_[0], max_logit);
  std::vector<wire::TopLogprob> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const int32_t id = ranked_[i];
    out.push_back({id, gen_->TokenBytes(id), logits[id] - log_z});
  }
  return out;
}

Result<int32_t> GenerationEngine::Pick(Sequence& s, const float* logits, float* logprob, DraftCheck* draft) {
  const size_t vocab = gen_->info().vocab_size;
  if (!s.penalties && !s.format && !draft) return s.sampler->Next(logits, vocab, logprob);
  const float* next = logits;
  if (s.penalties) {
    adjusted_.assign(logits, logits + vocab);
    s.penalties->Apply(adjusted_.data(), vocab, s.generated(), s.stop_ids);
    next = adjusted_.data();
  }
  int32_t token = 0;
  if (s.format) {
    SHOAL_ASSIGN_OR_RETURN(token, s.format->Next(*s.sampler, next, vocab, s.stop_ids, nullptr));
    s.format->Accept(token, s.stop_ids);
  } else if (draft && !s.sampler->greedy()) {  // never under a format: see Draft
    token = s.sampler->Verify(next, vocab, draft->token, *draft->q, &draft->accepted);
  } else {
    token = s.sampler->Next(next, vocab, nullptr);
  }
  if (draft && s.sampler->greedy()) draft->accepted = token == draft->token;
  if (s.penalties) s.penalties->Add(token);
  // The model's own log-probability, before the adjustments and the mask.
  if (logprob) *logprob = TokenLogProb(logits, vocab, token, *std::max_element(logits, logits + vocab));
  return token;
}

void GenerationEngine::Emit(Sequence& s, bool final) {
  wire::GenerationChunk& c = s.pending;
  if (final) {
    c.prompt_tokens = s.prompt_len;
    c.completion_tokens = s.generated();
    c.cached_prompt_tokens = s.cached_prompt;
    c.queue_ms = std::max<int64_t>(0, s.started_unix_us - s.item.enqueued_us) / 1000.0;
    c.ttft_ms = s.generated() > 0 ? Millis(s.first_token - s.started) : 0;
    c.itl_ms = s.generated() > 1 ? Millis(s.last_token - s.first_token) / (s.generated() - 1) : 0;
  }
  PublishChunk(nc_, worker_id_, *model_, s.item, s.next_chunk, final, c, &reply_);
  ++s.next_chunk;
  c = wire::GenerationChunk();
}

void GenerationEngine::Finish(size_t index, Outcome outcome, const Status& error) {
  std::unique_ptr<Sequence> s = std::move(running_[index]);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
  blocks_.Release(&s->table);
  if (drafter_) drafter_->Release(&s->draft);
  {
    // Before the reply: a client that has its answer sees the blocks back
    // and the sequence gone.
    std::lock_guard lock(mu_);
    MirrorLocked();
  }
  if (outcome == Outcome::kSucceeded) {
    Emit(*s, true);
    if (const ItemSpans* spans = runner_->spans(); spans && ItemSpans::Traced(s->item)) {
      spans->Generation(s->item, s->started_unix_us, s->started, s->first_token, s->last_token, s->generated());
    }
    runner_->Complete(s->item);
  } else {
    runner_->Settle(s->item, outcome, error);
  }
  reaper_->Add(s->item.msg.release());
}

void GenerationEngine::Sweep(SteadyClock::time_point now) {
  const int64_t now_ms = UnixMillis();
  const auto half_ack_wait = std::chrono::milliseconds(model_->spec->queue.ack_wait_ms / 2);
  // Why a sequence should stop now, if it should.
  auto verdict = [&](const WorkItem& it) -> std::optional<Outcome> {
    if (it.work.deadline_unix_ms > 0 && now_ms >= it.work.deadline_unix_ms) return Outcome::kExpired;
    if (cancelled_ && cancelled_->Contains(it.work.request_id)) return Outcome::kCancelled;
    return std::nullopt;
  };
  auto keep_alive = [&](WorkItem& it) {
    if (now - it.last_progress < half_ack_wait) return;
    runner_->Progress(it);
    it.last_progress = now;
  };
  std::vector<std::pair<std::unique_ptr<Sequence>, Outcome>> dropped;
  {
    std::lock_guard lock(mu_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (auto v = verdict((*it)->item)) {
        dropped.emplace_back(std::move(*it), *v);
        it = waiting_.erase(it);
      } else {
        keep_alive((*it)->item);
        ++it;
      }
    }
  }
  for (auto& [s, outcome] : dropped) runner_->Settle(s->item, outcome);
  for (size_t i = running_.size(); i-- > 0;) {
    if (auto v = verdict(running_[i]->item)) {
      Finish(i, *v);  // a cancelled sequence frees its blocks here
    } else {
      keep_alive(running_[i]->item);
    }
  }
}

}  // namespace shoal::worker
