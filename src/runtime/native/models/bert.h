// BERT-family encoders (BERT, RoBERTa, XLM-R, MiniLM, bge/e5/gte) and their
// sequence-classification heads (cross-encoders, text classifiers) and
// token-classification heads (NER), from a Hugging Face directory:
// config.json + safetensors.
//
// DistilBERT is BERT's post-norm layer under other tensor names
// (transformer.layer.N.attention.q_lin, sa_layer_norm, ffn.lin1, ...), with
// no token types and a classifier head of pre_classifier + ReLU. MPNet is
// BERT's layer (attention.attn.q/k/v/o) with no token types, RoBERTa's
// positions and head, and T5-style bucketed relative-position bias on the
// scores, one table shared by every layer. ELECTRA is BERT's body under
// "electra." with embedding tables that may be narrower than the layers
// (embeddings_project maps them up) and RoBERTa's head with GELU.
//
// JinaBERT (jina-embeddings-v2 and its rerankers: position_embedding_type
// alibi) is BERT with two changes: no position table — ALiBi, a penalty
// −slope_h·|i − j| on every score — and, with feed_forward_type geglu, a
// gated feed-forward, gelu(x·W_g) ⊙ (x·W_u) through mlp.gated_layers, then
// mlp.wo and mlp.layernorm. No LoRA on it yet (lora_targets() is null).
//
// A batch runs packed: the token rows of all sequences back to back, no
// padding; attention keeps each sequence to itself (kernels.h). Sequences
// may run under different LoRA adapters in one batch: the base GEMMs are
// shared, and each run of rows under one adapter adds that adapter's
// low-rank update (lora/lora_adapter.h).
//
// Threading: immutable after Load; Forward and the heads may run from
// several threads at once (all scratch memory is per call), each call using
// at most `threads` cores.
#pragma once

#include <cstdint>
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

class Bert final : public EncoderNetwork {
 public:
  // `progress` (optional) hears the fraction of layers loaded.
  static Result<std::unique_ptr<Bert>> Load(const std::string& dir, const EncoderConfig& config,
                                            cpu::Precision precision,
                                            const std::function<void(double)>& progress = {});
  ~Bert() override;

  const EncoderConfig& config() const override { return config_; }
  bool has_classifier() const override { return classifier_ != nullptr; }
  size_t memory_bytes() const override;
  // Per layer, in order: query, key, value, attention.output.dense,
  // intermediate.dense, output.dense (kLoraPerLayer of them); replaceable:
  // a sequence classifier's dense layer, then its classifier; a token
  // classifier's classifier.
  const LoraTargets* lora_targets() const override {
    return config_.is_jina_bert() ? nullptr : &lora_targets_;
  }
  static constexpr size_t kLoraPerLayer = 6;
  // The same, from the config and the checkpoint's names alone (what
  // registration checks an adapter against, without loading the model).
  static LoraTargets LoraTargetsOf(const EncoderConfig& config, const SafeTensors& weights);

  Status HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                      std::vector<uint32_t>* offsets, int threads) const override;
  Status Classify(std::span<const TokenSequence> seqs, float* out, int threads) const override;
  Status ClassifyTokens(std::span<const TokenSequence> seqs, float* out, int threads) const override;

 private:
  struct Layer;
  Bert() = default;
  // The last hidden states of all sequences, packed; offsets[s]..offsets[s+1]
  // are sequence s's rows.
  void Forward(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
               std::vector<uint32_t>* offsets, int threads) const;

  EncoderConfig config_;
  std::unique_ptr<SafeTensors> weights_;  // f32 tables are used in place
  std::vector<std::vector<float>> converted_;  // f16/bf16 tables as f32
  const float* word_ = nullptr;
  const float* position_ = nullptr;  // null with ALiBi
  const float* token_type_ = nullptr;  // null without token types (DistilBERT)
  cpu::RelativeBias relative_bias_;  // JinaBERT's ALiBi, MPNet's buckets; empty for the rest
  std::unique_ptr<cpu::Linear> embeddings_project_;  // ELECTRA's, when its embeddings are narrower
  const float* emb_ln_gamma_ = nullptr;
  const float* emb_ln_beta_ = nullptr;
  std::vector<Layer> layers_;
  // Sequence-classification head (FindClassifierHead): a dense layer and its
  // activation on the first token, then the classifier. A
  // token-classification head is `classifier` alone, on every token.
  std::unique_ptr<cpu::Linear> head_dense_;
  cpu::Activation head_activation_ = cpu::Activation::kTanh;  // DistilBERT's: ReLU
  std::unique_ptr<cpu::Linear> classifier_;
  size_t linear_bytes_ = 0;
  LoraTargets lora_targets_;
};

}  // namespace shoal::native
