// EncoderModel: a BERT-family network and its tokenizer behind the Runtime
// interface — embeddings (Encode), cross-encoder relevance (Score),
// entities and labels (Extract: token and text classifiers), and the
// tokens themselves (Tokenize).
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
#include "runtime/native/native_options.h"
#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/runtime.h"

namespace shoal::native {

class EncoderModel final : public Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const ModelConfig& spec, const NativeOptions& options,
                                             const LoadContext& ctx);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return network_->memory_bytes(); }

  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override;
  Status Score(std::span<const ScoreInput> in, std::span<ScoreOutput> out) override;
  Status Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) override;
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override;
  Status UpdateLoras(std::span<const LoraConfig> loras) override;
  bool takes_token_ids() const override { return true; }
  bool LoraReady(std::string_view lora) override { return loras_ == nullptr || loras_->Ready(lora); }

 private:
  EncoderModel() = default;
  EncodeOptions LimitFor(bool truncate) const;

  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<EncoderNetwork> network_;  // Bert, or CudaBert on a GPU
  std::unique_ptr<LoraRegistry> loras_;      // null where the network runs no adapters
  Pooling pooling_ = Pooling::kCls;
  size_t max_tokens_ = 0;
  int threads_ = 1;
};

}  // namespace shoal::native
