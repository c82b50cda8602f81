// The encoder heads past pooling: SPLADE's sparse vector over the
// vocabulary, bge-m3's lexical weights, and ColBERT's (or bge-m3's) vector
// per token. All read the last hidden states (EncoderNetwork::HiddenStates),
// so one forward pass serves every output a batch asks for.
//
// Threading: immutable after Load; Run may be called from several threads
// at once (scratch memory is per call), each call using at most `threads`
// cores.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/loaders/safetensors.h"

namespace shoal::native {

// The masked-language-model head of a *ForMaskedLM checkpoint (BERT's
// cls.predictions.*, RoBERTa's and XLM-R's lm_head.*): dense → activation →
// LayerNorm → the decoder, tied to the word embeddings unless stored.
class SpladeHead {
 public:
  static Result<std::unique_ptr<SpladeHead>> Load(const std::string& dir, const EncoderConfig& config,
                                                  const SpladeConfig& splade, cpu::Precision precision);

  size_t vocab_size() const { return vocab_; }
  size_t memory_bytes() const;

  // Sequence s's weights over the vocabulary, log(1 + ReLU(logit)) of its
  // tokens (rows offsets[s]..offsets[s+1] of `hidden`) max- or sum-pooled,
  // into out[s * vocab_size() ...].
  void Run(const float* hidden, std::span<const uint32_t> offsets, float* out, int threads) const;

 private:
  SpladeHead() = default;

  size_t hidden_ = 0, vocab_ = 0;
  bool sum_ = false;
  float eps_ = 1e-12f;
  cpu::Activation act_ = cpu::Activation::kGelu;
  std::unique_ptr<SafeTensors> weights_;
  std::vector<std::vector<float>> converted_;  // f16/bf16 tensors as f32
  const float* ln_gamma_ = nullptr;
  const float* ln_beta_ = nullptr;
  std::unique_ptr<cpu::Linear> transform_;  // [hidden → hidden]
  std::unique_ptr<cpu::Linear> decoder_;    // [hidden → vocabulary]
};

// A projection per token, then each token's vector at unit length:
// ColBERT's (PyLate's Dense module: linear.weight, maybe a bias, identity
// activation) or bge-m3's colbert_linear.pt.
class ColbertHead {
 public:
  static Result<std::unique_ptr<ColbertHead>> Load(const std::string& dense_dir, size_t hidden,
                                                   cpu::Precision precision);
  static Result<std::unique_ptr<ColbertHead>> LoadTorch(const std::string& pt_file, size_t hidden,
                                                        cpu::Precision precision);

  size_t dim() const { return dim_; }
  size_t memory_bytes() const { return linear_->memory_bytes(); }

  // `rows` rows of `hidden` projected and normalized into out[rows * dim()].
  void Run(const float* hidden, size_t rows, float* out, int threads) const;

 private:
  ColbertHead() = default;

  size_t dim_ = 0;
  std::unique_ptr<cpu::Linear> linear_;
};

// bge-m3's sparse output (FlagEmbedding's sparse_linear.pt): a weight per
// token, ReLU(h·w + b), and per vocabulary id the largest weight of its
// tokens, the `skipped` ids (the tokenizer's special tokens) left out.
class LexicalWeightsHead {
 public:
  static Result<std::unique_ptr<LexicalWeightsHead>> LoadTorch(const std::string& pt_file, size_t hidden,
                                                               std::vector<int32_t> skipped);

  size_t memory_bytes() const { return weight_.size() * sizeof(float); }
  // Each token's weight: `rows` rows of `hidden` into out[rows].
  void Run(const float* hidden, size_t rows, float* out) const;
  // One sequence's entries from its ids and their weights (Run's), as
  // SparseEntries orders and cuts them.
  void Entries(std::span<const int32_t> ids, const float* weights, uint32_t top_k, std::vector<uint32_t>* indices,
               std::vector<float>* values) const;

 private:
  LexicalWeightsHead() = default;

  std::vector<float> weight_;
  float bias_ = 0;
  std::vector<int32_t> skipped_;  // sorted
};

// The nonzero entries of a pooled sparse vector, largest first (ties: the
// lower index first), at most `top_k` of them (0: all).
void SparseEntries(std::span<const float> weights, uint32_t top_k, std::vector<uint32_t>* indices,
                   std::vector<float>* values);

}  // namespace shoal::native
