// GenerationEngine: continuous (iteration-level) batching for one generative
// model on one worker — vLLM's scheduling, in a thread of its own.
//
//   Push (intake loop) ──▶ waiting ──admit──▶ running ──step──▶ chunks out
//
// Each step is one Generator::Forward over every running sequence: a
// sequence that is decoding feeds its last token; one that is still reading
// its prompt feeds a chunk of it (chunked prefill), within the step's token
// budget (the profile's batching.max_batch_tokens), so a long prompt never
// stalls the others' decoding for more than a step. Sequences join between
// steps while there are slots (batching.max_batch_requests) and KV blocks
// for their prompt; they leave when they finish, fail, expire or are
// cancelled, and their blocks go back at once.
//
// Priority classes (queue/priority.h; generation_admission.cc): the line
// keeps interactive sequences ahead of batch-class ones, and when slots or
// blocks run out for an interactive sequence, the youngest batch-class one
// steps aside for it (preempted, as below); and batch-class sequences sit
// out every step while interactive ones run, so a flood of batch work
// neither takes an interactive request's place nor slows its steps.
//
// KV memory (kv_blocks.h): blocks are taken as positions are reached. When
// a step needs a block and none is left, the youngest running sequence (a
// batch-class one first) is preempted — its blocks released, its tokens
// kept — and goes back to the head of its class in the waiting line, to be
// recomputed (what it already streamed stays streamed). Prompts sharing a prefix reuse its published blocks; a
// sequence whose prefix another running one is still computing waits for
// it rather than computing it too (this is how the n outputs of one request
// share their prompt's KV blocks: each is an item of its own).
//
// Results: after each step, each sequence that produced text publishes a
// chunk (wire/generate.h) to its reply subject with the next "seq"; the
// last carries "final", the finish reason, usage and timing; then the
// message is acked. Failures go through BatchRunner::Settle (ack_policy.h):
// a prompt over the context → INVALID_INPUT (+TERM); a failed step →
// INFERENCE_ERROR for the sequences in it. Long generations send +WPI every
// half AckWait so JetStream does not redeliver them meanwhile.
//
// Sampling: the fields a request leaves out take the model's defaults
// (GeneratorInfo::sampling_defaults, its generation_config.json).
//
// Logits: a request's penalties, logit_bias and min_tokens adjust a copy of
// its row before the pick (runtime/logit_adjustments.h).
//
// Formats: a request with a response_format (JSON object or schema, regex,
// choice) samples under an OutputConstraint (runtime/structured): only
// tokens its grammar allows, compiled once per format for this model's
// vocabulary (grammars_, engine thread only), with the masks cached; the
// sequence ends when its output is complete.
//
// LoRA: a request under an adapter (the work header's "lora")
// runs in the same continuous batch as the base's and the other adapters'
// requests; each step's chunk names its sequence's adapter, and the prefix
// cache keeps each adapter's blocks apart (its keys and values differ).
//
// Speculation (the profile's `speculative`, drafter.h): a decoding sequence
// may feed its last token and up to k drafted ones in its chunk, with a row
// of logits after each; the drafts its sampler accepts and one token of the
// model's own are taken in order, as if decoded one by one (penalties,
// formats, stops and logprobs alike), and its cache position falls back to
// the last accepted one. k follows each sequence's acceptance rate. A
// sampling sequence held to a format does not speculate (its masked
// distribution is not the sampler's). Drafting is in
// generation_speculation.cc, tool calls in generation_tool_calls.cc; a
// request's state is a Sequence (generation_sequence.h).
//
// Pull credit: FreeSlots() says how many more sequences it could start now
// (free slots, while KV blocks remain for a typical prompt); the worker's
// planner asks JetStream for that many and no more.
//
// Threading: Push/FreeSlots/Stop from any thread; `mu_` guards `waiting_`
// and the counters FreeSlots reads. Everything else — running sequences,
// KV bookkeeping, the model's Forward — belongs to the engine thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "runtime/generator.h"
#include "runtime/structured/grammar_cache.h"
#include "runtime/structured/tool_calls.h"
#include "wire/generate.h"
#include "worker/batch_runner.h"
#include "worker/cancelled_requests.h"
#include "worker/drafter.h"
#include "worker/generation_inputs.h"
#include "worker/kv_blocks.h"
#include "worker/sequence_engine.h"
#include "worker/work_item.h"

namespace shoal::worker {

struct Sequence;

class GenerationEngine : public SequenceEngine {
 public:
  // `model` owns `generator` and `draft` (the speculative draft model;
  // null: none); they outlive the engine (Stop before unloading).
  // `threads`: cores one step may use. `on_free` runs on the engine thread
  // when sequences finished (pull credit to ask for).
  GenerationEngine(ServedModel* model, Generator* generator, Generator* draft, natsConnection* nc,
                   queue::MsgReaper* reaper, BatchRunner* runner, const CancelledRequests* cancelled,
                   std::string worker_id, int threads, std::function<void()> on_free);
  ~GenerationEngine() override;  // Stop(kShuttingDown)

  // Queues a delivered item (its model is this engine's).
  void Push(WorkItem item) override;

  // Sequences it could start now (for the pull planner); interactive ones
  // may also take the slots of running batch-class sequences, which step
  // aside for them (Admit).
  int64_t FreeSlots() const override;
  int64_t FreeInteractiveSlots() const override;

  // Stops the thread; what waits or runs is settled with `outcome`
  // (kShuttingDown: nak, redelivered elsewhere; kNotServedHere on unload).
  void Stop(Outcome outcome = Outcome::kShuttingDown) override;

  // As of the end of the last step.
  Stats stats() const override;

 private:
  void Loop();
  void Admit();
  bool Prepare(Sequence& s);  // parse + tokenize; false when settled (bad input)
  // A chat's images (generation_images.cc): each placeholder token the
  // template spelled widened to the image's positions in `ids`, the images
  // embedded, s.placed and s.prefix_key set. INVALID_INPUT naming the image
  // that fails, or when the model reads none.
  Status PlaceImages(Sequence& s, const std::vector<RequestImage>& images, std::vector<int32_t>* ids);
  // Whether a running sequence is computing prompt blocks `s` would share
  // (the other outputs of an n > 1 request, or a common system prompt):
  // then `s` waits a step or more and adopts them from the prefix cache.
  bool AwaitsSharedPrefix(const Sequence& s) const;
  void Step();
  // Whether `s` sits this step out: a batch-class sequence while
  // interactive ones run (batch_paused_).
  bool Paused(const Sequence& s) const;
  // Drafts for the decoding sequences that speculate this step (within
  // `budget` extra tokens and the free KV blocks); each gets its `drafted`.
  void Draft(uint32_t budget);
  // Takes a token the model chose for `s` (its row of logits `row`): output
  // text, logprobs, stops. Returns why the sequence ends, if it does.
  wire::FinishReason Take(Sequence& s, int32_t token, float logprob, const float* row, SteadyClock::time_point now);
  // A drafted token a pick checks, and whether the pick kept it.
  struct DraftCheck {
    int32_t token = 0;
    const std::vector<float>* q = nullptr;  // its draft distribution; empty: a certain draft
    bool accepted = false;
  };
  // The sequence's next token from its row of logits: adjusted (penalties,
  // bias, min_tokens), held to its format, sampled — or, over a drafted
  // token, the draft when the sampler's rule accepts it
  // (Sampler::Verify; greedy: when it is the pick), else the model's own.
  Result<int32_t> Pick(Sequence& s, const float* logits, float* logprob, DraftCheck* draft = nullptr);
  // The `n` most likely tokens of a row of logits, with the model's own
  // log-probabilities (top_logprobs).
  std::vector<wire::TopLogprob> MostLikely(const float* logits, uint32_t n);
  // Tools (generation_tool_calls.cc): the model's call syntax (read once
  // from its chat template), a sequence's call stream, and, when a call is
  // required, its grammar.
  Result<structured::ToolCallSyntax> CallSyntax();
  Status PrepareToolCalls(Sequence& s, const wire::GenerateRequest& req);
  // The sequence's last text, and the calls in it when it may make some.
  void EndText(Sequence& s);
  void Emit(Sequence& s, bool final);
  void Finish(size_t index, Outcome outcome, const Status& error = Status::Ok());
  // Back in line, at the head of its priority class, its blocks freed (it
  // computes its tokens again when admitted).
  void Preempt(size_t index);
  // Preempts the youngest batch-class running sequence, for interactive
  // work; false when none runs.
  bool YieldToInteractive();
  // Copies running_'s counts and the free blocks into the mirrors (under mu_).
  void MirrorLocked();
  void Sweep(SteadyClock::time_point now);  // deadlines, cancellations, +WPI

  ServedModel* model_;
  Generator* gen_;
  natsConnection* nc_;
  queue::MsgReaper* reaper_;
  BatchRunner* runner_;
  const CancelledRequests* cancelled_;
  const std::string worker_id_;
  const int threads_;
  const std::function<void()> on_free_;
  const uint32_t max_running_;
  const uint32_t step_tokens_;
  KvBlocks blocks_;  // engine thread only
  std::unique_ptr<Drafter> drafter_;  // null: no speculation; engine thread only
  const uint32_t draft_k_;            // the most drafted per sequence and step
  uint64_t draft_steps_ = 0;          // steps that drafted (engine thread only)
  bool batch_paused_ = false;         // this step: interactive sequences run (engine thread only)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Sequence>> waiting_;  // guarded by mu_
  bool stop_ = false;                              // guarded by mu_
  Outcome stop_outcome_ = Outcome::kShuttingDown;  // guarded by mu_
  // Mirrors of engine-thread state, for FreeSlots and stats(): guarded by mu_.
  Stats stats_;
  int64_t running_batch_ = 0;  // of stats_.running, batch-class sequences

  std::vector<std::unique_ptr<Sequence>> running_;  // engine thread only
  std::vector<float> logits_;                       // engine thread only
  std::vector<float> adjusted_;                     // one row of logits adjusted; engine thread only
  std::vector<int32_t> ranked_;                     // token ids by logit (MostLikely); engine thread only
  structured::GrammarCache grammars_;               // engine thread only
  std::optional<Result<structured::ToolCallSyntax>> tool_syntax_;  // engine thread only
  std::string reply_;                               // a chunk being written; engine thread only
  std::thread thread_;
};

}  // namespace shoal::worker
