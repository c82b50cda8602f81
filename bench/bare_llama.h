// llama.cpp alone, with no server: what the llama.cpp and int8 benchmarks
// measure Shoal against. One warmed context; the prompts prefilled
// together, then every sequence's next token in one llama_decode per step,
// greedy — the ceiling any server on the same libllama can reach. Its
// steps compute on a thread pool of its own, as the llamacpp runtime's do
// (runtime/llamacpp/threadpool.h; `poll` its polling level).
// (Call ggml_backend_load_all_from_path first.)
#pragma once

#include <llama.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "runtime/llamacpp/threadpool.h"

namespace shoal::bench {

// llama.cpp alone: `concurrency` sequences of the prompt, prefilled
// together (whole prompts per llama_decode, up to the batch size), then
// `new_tokens` greedy steps of one batch each, on a context warmed by a
// first round. Round() gives tokens/s of the generated tokens over the whole
// round (prefill included, as a client sees it); NAN on failure.
class BareLlama {
 public:
  BareLlama(const std::string& gguf, const char* prompt, int concurrency, int new_tokens,
            int threads, uint32_t poll = 0)
      : concurrency_(concurrency), new_tokens_(new_tokens) {
    model_ = llama_model_load_from_file(gguf.c_str(), llama_model_default_params());
    if (!model_) return;
    vocab_ = llama_model_get_vocab(model_);
    prompt_.resize(512);
    const int n = llama_tokenize(vocab_, prompt, static_cast<int32_t>(std::strlen(prompt)),
                                 prompt_.data(), static_cast<int32_t>(prompt_.size()), true, true);
    prompt_.resize(static_cast<size_t>(std::max(n, 0)));
    llama_context_params cp = llama_context_default_params();
    cp.n_seq_max = static_cast<uint32_t>(concurrency);
    cp.n_ctx = static_cast<uint32_t>(prompt_.size() + new_tokens + 8) * cp.n_seq_max;
    cp.n_batch = kBatch;
    cp.n_ubatch = kBatch;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    auto pool = llamacpp::Threadpool::Create(threads, poll);
    if (!pool.ok()) return;
    pool_ = std::move(pool).value();
    ctx_ = llama_init_from_model(model_, cp);
    if (ctx_) llama_attach_threadpool(ctx_, pool_->get(), pool_->get());
    batch_ = llama_batch_init(kBatch, 0, 1);
  }
  ~BareLlama() {
    llama_batch_free(batch_);
    if (ctx_) llama_free(ctx_);
    if (model_) llama_model_free(model_);
  }

  double Round() {
    if (!ctx_ || prompt_.empty()) return NAN;
    llama_memory_clear(llama_get_memory(ctx_), true);
    const int n = static_cast<int>(prompt_.size());
    std::vector<llama_token> last(static_cast<size_t>(concurrency_));
    const auto t0 = SteadyClock::now();
    for (int s = 0; s < concurrency_;) {  // prefill: whole prompts per decode
      batch_.n_tokens = 0;
      const int first = s;
      for (; s < concurrency_ && batch_.n_tokens + n <= kBatch; ++s) {
        for (int i = 0; i < n; ++i) Add(prompt_[static_cast<size_t>(i)], i, s, i == n - 1);
      }
      if (llama_decode(ctx_, batch_) != 0) return NAN;
      for (int k = first; k < s; ++k) last[static_cast<size_t>(k)] = Pick((k - first + 1) * n - 1);
    }
    generated_.assign(1, last[0]);
    for (int step = 1; step < new_tokens_; ++step) {
      batch_.n_tokens = 0;
      for (int k = 0; k < concurrency_; ++k)
        Add(last[static_cast<size_t>(k)], n + step - 1, k, true);
      if (llama_decode(ctx_, batch_) != 0) return NAN;
      for (int k = 0; k < concurrency_; ++k) last[static_cast<size_t>(k)] = Pick(k);
      generated_.push_back(last[0]);
    }
    return concurrency_ * new_tokens_ /
           std::chrono::duration<double>(SteadyClock::now() - t0).count();
  }

  // The greedy next token after each of `tokens` (at most 512), all in
  // one decode of a fresh sequence: the model's top-1 along a fixed text.
  std::vector<llama_token> TopOneAlong(const std::vector<llama_token>& tokens) {
    std::vector<llama_token> out;
    if (!ctx_ || tokens.empty() || tokens.size() > static_cast<size_t>(kBatch)) return out;
    llama_memory_clear(llama_get_memory(ctx_), true);
    batch_.n_tokens = 0;
    for (size_t i = 0; i < tokens.size(); ++i) Add(tokens[i], static_cast<int>(i), 0, true);
    if (llama_decode(ctx_, batch_) != 0) return out;
    for (size_t i = 0; i < tokens.size(); ++i) out.push_back(Pick(static_cast<int>(i)));
    return out;
  }

  // The prompt's tokens, and the first sequence's tokens of the last round.
  const std::vector<llama_token>& prompt() const { return prompt_; }
  const std::vector<llama_token>& generated() const { return generated_; }

 private:
  static constexpr int kBatch = 512;

  void Add(llama_token t, int pos, int seq, bool logits) {
    const int i = batch_.n_tokens++;
    batch_.token[i] = t;
    batch_.pos[i] = pos;
    batch_.n_seq_id[i] = 1;
    batch_.seq_id[i][0] = seq;
    batch_.logits[i] = logits;
  }
  llama_token Pick(int row) {  // greedy
    const float* l = llama_get_logits_ith(ctx_, row);
    return static_cast<llama_token>(std::max_element(l, l + llama_vocab_n_tokens(vocab_)) - l);
  }

  const int concurrency_, new_tokens_;
  std::vector<llama_token> generated_;
  llama_model* model_ = nullptr;
  const llama_vocab* vocab_ = nullptr;
  std::unique_ptr<llamacpp::Threadpool> pool_;  // outlives ctx_ (freed in the destructor's body)
  llama_context* ctx_ = nullptr;
  llama_batch batch_{};
  std::vector<llama_token> prompt_;
};

}  // namespace shoal::bench
