// EncoderModel: a BERT-family network and its tokenizer behind the Runtime
// interface — embeddings (Encode), cross-encoder relevance (Score),
// entities and labels (Extract: token and text classifiers), and the
// tokens themselves (Tokenize).
//
// A SPLADE checkpoint (sentence-transformers' SparseEncoder files) encodes
// into sparse vectors, a ColBERT one (PyLate's files) into a vector per
// token (output_heads.h): the forward pass is the same, the heads read its
// per-token states.
//
// Inputs are tokenized on the calling executor's thread, then the batch runs
// as one packed forward pass, on the CPU or (native.device: cuda) a GPU. On
// the CPU, inputs may name LoRA adapters (registered on the model, loaded on
// first use: lora/lora_registry.h); one batch mixes them freely. An input over the model's limit (the profile's
// max_input_tokens, capped by the position table) fails with INVALID_INPUT
// unless the request asked to truncate; truncation is reported per item.
//
// Threading: immutable after Load; calls may run concurrently.
#pragma once

#include <memory>

#include "runtime/native/lora/lora_registry.h"
#include "runtime/native/models/encoder_network.h"
#include "runtime/native/models/output_heads.h"
#include "runtime/native/native_options.h"
#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/runtime.h"

namespace shoal::native {

class EncoderModel final : public Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const ModelConfig& spec, const NativeOptions& options,
                                             const LoadContext& ctx);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override;

  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override;
  Status Score(std::span<const ScoreInput> in, std::span<ScoreOutput> out) override;
  Status Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) override;
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override;
  Status UpdateLoras(std::span<const LoraConfig> loras) override;
  bool takes_token_ids() const override { return true; }
  OutputKinds encode_outputs() const override { return outputs_; }
  bool LoraReady(std::string_view lora) override { return loras_ == nullptr || loras_->Ready(lora); }

 private:
  EncoderModel() = default;
  EncodeOptions LimitFor(bool truncate) const;
  // Encode for the models with an output head (sparse, multi-vector): one
  // forward pass, then each output some input asks for.
  Status EncodeWithHeads(std::span<const EncodeInput> in, std::span<EncodeOutput> out);
  void SparseOutputs(std::span<const EncodeInput> in, const std::vector<Encoding>& encodings,
                     const std::vector<size_t>& ok, const std::vector<float>& hidden,
                     const std::vector<uint32_t>& offsets, std::span<EncodeOutput> out) const;
  void MultivectorOutputs(std::span<const EncodeInput> in, const std::vector<Encoding>& encodings,
                          const std::vector<size_t>& ok, const std::vector<float>& hidden,
                          const std::vector<uint32_t>& offsets, std::span<EncodeOutput> out) const;
  // ColBERT's tokens: the marker after the first token, a query's
  // expansion ([MASK] up to its length, unseen unless attend_to_expansion).
  Result<Encoding> ColbertEncoding(const EncodeInput& x, uint32_t* attend) const;
  Status LoadHeads(const PoolingConfig& pooling, const NativeOptions& options);

  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<EncoderNetwork> network_;  // Bert, or CudaBert on a GPU
  std::unique_ptr<LoraRegistry> loras_;      // null where the network runs no adapters
  Pooling pooling_ = Pooling::kCls;
  OutputKinds outputs_ = static_cast<OutputKinds>(OutputKind::kDense);
  std::unique_ptr<SpladeHead> splade_;    // sparse output
  std::unique_ptr<ColbertHead> colbert_;  // multi-vector output (PyLate's or bge-m3's)
  std::unique_ptr<LexicalWeightsHead> lexical_;  // bge-m3's sparse output
  // ColBERT's settings and the token ids they name; skiplist sorted.
  struct ColbertTokens {
    ColbertConfig config;
    int32_t query_marker = 0, document_marker = 0, mask = 0;
    std::vector<int32_t> skiplist;
  };
  std::unique_ptr<ColbertTokens> colbert_tokens_;
  size_t max_tokens_ = 0;
  int threads_ = 1;
};

}  // namespace shoal::native
