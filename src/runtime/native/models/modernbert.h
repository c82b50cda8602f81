// ModernBERT encoders (gte-modernbert, modernbert-embed, ModernBERT
// rerankers, classifiers and NER models), from a Hugging Face directory:
// config.json (model_type modernbert) + safetensors.
//
// The architecture, against BERT's: no position table (rotary embeddings on
// queries and keys, a larger theta on global layers), layers that alternate
// global attention with local attention over a window of neighbours
// (ModernBertConfig::global_layers), pre-norm blocks with LayerNorms without
// biases (layer 0 reads the embeddings' norm directly), a GeGLU feed-forward,
// a final norm, and no token types. Heads: dense → activation → LayerNorm,
// then the classifier, on the CLS token or the mean (classifier_pooling)
// for a sequence classifier and on every token for a token classifier.
//
// A batch runs packed, as Bert does (bert.h), and sequences may run under
// different LoRA adapters in one batch (on attn.Wqkv, attn.Wo, mlp.Wi,
// mlp.Wo; an adapter's own head is not taken yet).
//
// Threading: immutable after Load; Embed and the heads may run from several
// threads at once (all scratch memory is per call), each call using at most
// `threads` cores.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/safetensors.h"
#include "runtime/native/lora/lora_adapter.h"
#include "runtime/native/models/encoder_network.h"

namespace shoal::native {

class ModernBert final : public EncoderNetwork {
 public:
  // `progress` (optional) hears the fraction of layers loaded.
  static Result<std::unique_ptr<ModernBert>> Load(const std::string& dir, const EncoderConfig& config,
                                                  cpu::Precision precision,
                                                  const std::function<void(double)>& progress = {});
  ~ModernBert() override;

  const EncoderConfig& config() const override { return config_; }
  bool has_classifier() const override { return classifier_ != nullptr; }
  size_t memory_bytes() const override;
  // Per layer, in order: attn.Wqkv, attn.Wo, mlp.Wi, mlp.Wo (kLoraPerLayer).
  const LoraTargets* lora_targets() const override { return &lora_targets_; }
  static constexpr size_t kLoraPerLayer = 4;
  // The same, from the config and the checkpoint's names alone.
  static LoraTargets LoraTargetsOf(const EncoderConfig& config, const SafeTensors& weights);

  Status HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                      std::vector<uint32_t>* offsets, int threads) const override;
  Status Classify(std::span<const TokenSequence> seqs, float* out, int threads) const override;
  Status ClassifyTokens(std::span<const TokenSequence> seqs, float* out, int threads) const override;

 private:
  struct Layer;
  ModernBert() = default;
  // The final-normed hidden states of all sequences, packed; offsets as Bert's.
  void Forward(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
               std::vector<uint32_t>* offsets, int threads) const;
  // The classification head on `rows` rows of `x`: dense → activation →
  // LayerNorm → classifier, logits into `out`.
  void Head(const float* x, size_t rows, float* out, int threads) const;

  EncoderConfig config_;
  std::unique_ptr<SafeTensors> weights_;
  std::vector<std::vector<float>> converted_;
  const float* embeddings_ = nullptr;
  const float* emb_norm_gamma_ = nullptr;
  const float* emb_norm_beta_ = nullptr;  // null: no bias (norm_bias false)
  std::vector<Layer> layers_;
  const float* final_gamma_ = nullptr;
  const float* final_beta_ = nullptr;
  // cos/sin per position (head_dim/2 of each), for global and local layers.
  std::vector<float> rope_global_, rope_local_;
  std::unique_ptr<cpu::Linear> head_dense_;  // with a classifier only
  const float* head_gamma_ = nullptr;
  const float* head_beta_ = nullptr;
  std::unique_ptr<cpu::Linear> classifier_;
  size_t linear_bytes_ = 0;
  LoraTargets lora_targets_;
};

}  // namespace shoal::native
