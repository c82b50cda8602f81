// Scheduler: llama.cpp's continuous batching behind the StreamingGenerator
// contract. One llama_context holds up to `sequences` sequences, each with
// a KV stream of its own of `context` positions (so a running sequence can
// always grow to its context: the cache cannot run out under it). A thread
// loops: admit waiting jobs into free sequence slots, build one llama_batch
// of the next token of every decoding sequence plus prompt chunks of the
// prefilling ones (within `batch_tokens` a step: chunked prefill, decoding
// first so a long prompt never stalls the others), llama_decode, sample
// each sequence whose chunk ended its tokens, stream.
//
// Failures never hang a job: a step llama.cpp cannot place (decode returns
// 1) is retried with half the tokens, down to one; one that fails otherwise
// ends its sequences with INFERENCE_ERROR. Each sequence's cache is cleared
// when it ends. Destruction drains: the thread stops, and every job not yet
// ended ends with NO_CAPACITY.
//
// Threading: Start and Cancel from any thread (mu_ guards the waiting
// jobs, the cancels and the handles that are live). Everything else —
// the context, the batch, the running sequences — is the thread's alone.
// A job that fails before it is queued (its prompt refused) gets its one
// final update on Start's caller's thread, before Start returns.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "runtime/llamacpp/output_grammars.h"
#include "runtime/llamacpp/prompt.h"
#include "runtime/llamacpp/sequence.h"
#include "runtime/llamacpp/threadpool.h"
#include "runtime/streaming_generator.h"

namespace shoal::llamacpp {

class Scheduler final : public StreamingGenerator {
 public:
  struct Limits {
    uint32_t sequences = 1;      // at once
    uint32_t context = 0;        // positions per sequence (prompt + output)
    uint32_t batch_tokens = 0;   // tokens per step
  };
  // Steps compute on `pool`'s threads. MODEL_LOAD_FAILED when llama.cpp
  // cannot make the context.
  static Result<std::unique_ptr<Scheduler>> Create(const llama_model* model, const PromptBuilder* prompts,
                                                   Limits limits, std::unique_ptr<Threadpool> pool);
  ~Scheduler() override;

  uint32_t max_sequences() const override { return limits_.sequences; }
  uint64_t Start(GenerationJob job, Sink sink) override;
  void Cancel(uint64_t handle) override;

  // The KV cache and buffers the context holds.
  size_t memory_bytes() const { return memory_bytes_; }

 private:
  struct Waiting {
    uint64_t handle;
    GenerationJob job;
    std::vector<int32_t> prompt;
    SamplerPtr format;  // holds the output to the job's format; null for text
    Sink sink;
  };
  // One sequence's part of a step.
  struct Chunk {
    size_t slot;
    uint32_t n;
    bool logits;
  };

  Scheduler(const llama_model* model, const PromptBuilder* prompts, Limits limits, std::unique_ptr<Threadpool> pool,
            ContextPtr ctx);
  // The job's prompt and its format's sampler (null for text), or why it
  // cannot run.
  Result<std::vector<int32_t>> Prepare(const GenerationJob& job, SamplerPtr* format);
  void Loop();
  // Moves waiting jobs into free slots and takes the cancels; returns the
  // waiting jobs cancelled. Under mu_.
  std::vector<Waiting> Admit(std::set<uint64_t>* cancels);
  // A job that never ran ends (its one final update).
  void EndWaiting(Waiting& w, Status status, std::string reason);
  void Step();
  // Fills batch_ from the running sequences, `budget` tokens at most.
  std::vector<Chunk> Plan(uint32_t budget);
  // Ends the sequence in `slot` (its final update already sent) and frees
  // the slot and its cache.
  void Release(size_t slot);

  const llama_model* model_;
  const llama_vocab* vocab_;
  const PromptBuilder* prompts_;
  const Limits limits_;
  OutputGrammars grammars_;
  size_t memory_bytes_ = 0;

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Waiting> waiting_;
  std::set<uint64_t> cancels_;
  std::set<uint64_t> live_;  // started, not ended
  bool stopping_ = false;
  uint64_t next_handle_ = 1;

  // The thread's.
  std::unique_ptr<Threadpool> pool_;  // outlives ctx_, which computes on it
  ContextPtr ctx_;
  llama_batch batch_;
  std::vector<std::unique_ptr<Sequence>> slots_;  // by llama seq_id; null: free
  std::vector<size_t> order_;                     // occupied slots, in admission order
  std::thread thread_;
};

}  // namespace shoal::llamacpp
