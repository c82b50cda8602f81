// DecoderEmbedder: a Llama-family decoder used as an embedder (Qwen3-Embedding,
// gte-Qwen2 and their kin: a sentence-transformers directory with a Pooling
// module) and its tokenizer behind the Runtime interface — Encode and
// Tokenize.
//
// Each text runs through the decoder, causally or, when the config (or the
// profile's native.attention) says it was trained so, bidirectionally, with
// no cache kept between calls. Its vector is the final norm of its last
// token (Qwen3-Embedding's tokenizer appends <|endoftext|>, so that token
// has read the whole text) or of the mean of its tokens, as the Pooling
// module says; unit length unless the request says otherwise. A query's instruction is
// the profile's prompt (config_sentence_transformers.json), prepended by the
// serving plane as for every embedder.
//
// The KV cache is scratch: each piece of a batch writes it from block 0, a
// batch larger than the cache running as several pieces. It holds at least
// one input of the model's limit (the profile's max_input_tokens, capped by
// max_position_embeddings) and is counted in memory_bytes().
//
// Threading: tokenizing runs on the calling thread; the forward passes of
// concurrent calls take turns (one network, one cache).
#pragma once

#include <memory>
#include <mutex>

#include "runtime/native/models/llama.h"
#include "runtime/native/native_options.h"
#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/runtime.h"

namespace shoal::native {

class DecoderEmbedder final : public Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const ModelConfig& spec, const NativeOptions& options,
                                             const LoadContext& ctx);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return llama_->weight_bytes() + llama_->kv_bytes(); }
  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override;
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override;
  bool takes_token_ids() const override { return true; }

 private:
  DecoderEmbedder() = default;
  // The input as tokens held to the model's limit: its text tokenized with
  // the tokenizer's special tokens, or the caller's ids as they are.
  Result<Encoding> Tokens(const EncodeInput& in) const;

  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  size_t max_tokens_ = 0;
  uint32_t kv_blocks_ = 0;
  int threads_ = 1;
  Pooling pooling_ = Pooling::kLastToken;
  std::mutex mu_;  // one forward pass at a time
  std::unique_ptr<Llama> llama_;
};

}  // namespace shoal::native
