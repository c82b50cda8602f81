// LlamaCppEmbedder: a GGUF embedding model (e.g. llama.cpp's `bert`
// architecture with its pooling) serving Encode and Tokenize.
//
// Each text of a batch goes through llama.cpp on its own and comes back
// pooled (the GGUF's pooling: mean, CLS, last). Why not several texts in
// one llama.cpp batch, a sequence id each: llama.cpp's kernels then sum in
// an order that depends on where a text sits in the batch (tiled attention,
// the pooling matmul), so the same text gives a vector different in its
// last bits next to different neighbours — and the contract wants equal
// inputs to give equal outputs (the conformance suite checks it).
//
// Threading: Encode and Tokenize may run on many threads at once. The
// tokenizing runs on each caller's thread; the forward passes take turns on
// the model's one llama_context (mu_), llama.cpp using `threads` cores
// inside each.
#pragma once

#include <memory>
#include <mutex>

#include "runtime/llamacpp/threadpool.h"
#include "runtime/llamacpp/vocab.h"
#include "runtime/runtime.h"

namespace shoal::llamacpp {

class LlamaCppEmbedder final : public Model {
 public:
  // `context`: the most tokens of one text; it computes on `pool`'s threads.
  static Result<std::unique_ptr<Model>> Create(ModelPtr model, const ModelConfig& config, uint32_t context,
                                               std::unique_ptr<Threadpool> pool);
  ~LlamaCppEmbedder() override;

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return memory_bytes_; }
  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override;
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override;

 private:
  LlamaCppEmbedder(ModelPtr model, std::unique_ptr<Threadpool> pool, ContextPtr ctx, const ModelConfig& config,
                   uint32_t limit);
  // The text's tokens within limit_ (cut when it asks to be, else refused).
  Status Prepare(const EncodeInput& in, std::vector<int32_t>* ids, EncodeOutput* out) const;
  // One text's forward pass and pooling into `out`.
  Status Run(const std::vector<int32_t>& ids, bool normalize, EncodeOutput* out);

  ModelPtr model_;
  const llama_vocab* vocab_;
  const ModelConfig config_;
  const uint32_t limit_;     // tokens per text
  const bool encoder_only_;  // llama_encode rather than llama_decode
  size_t memory_bytes_ = 0;

  std::unique_ptr<Threadpool> pool_;  // outlives ctx_, which computes on it
  std::mutex mu_;                     // guards ctx_ and batch_
  ContextPtr ctx_;
  llama_batch batch_;
};

}  // namespace shoal::llamacpp
