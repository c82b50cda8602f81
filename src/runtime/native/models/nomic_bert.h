// NomicBERT embedders (nomic-embed-text v1/v1.5, model_type nomic_bert),
// from a Hugging Face directory: config.json + safetensors, as nomic's
// modeling_hf_nomic_bert.py saves them.
//
// The architecture, against BERT's: no position table (rotary embeddings on
// queries and keys, GPT-NeoX's rotate-half convention, over the whole head),
// one fused q|k|v projection, a SwiGLU feed-forward (fc11 · silu(fc12),
// then fc2), and no biases on those dense layers; the embeddings' LayerNorm
// and the post-norm LayerNorms of each block are BERT's. An embedder only:
// the checkpoints carry no classification heads.
//
// A batch runs packed, as Bert does (bert.h). No LoRA adapters yet.
//
// Threading: immutable after Load; Embed and HiddenStates may run from
// several threads at once (all scratch memory is per call), each call using
// at most `threads` cores.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/safetensors.h"
#include "runtime/native/models/encoder_network.h"

namespace shoal::native {

class NomicBert final : public EncoderNetwork {
 public:
  // `progress` (optional) hears the fraction of layers loaded.
  static Result<std::unique_ptr<NomicBert>> Load(const std::string& dir, const EncoderConfig& config,
                                                 cpu::Precision precision,
                                                 const std::function<void(double)>& progress = {});
  ~NomicBert() override;

  const EncoderConfig& config() const override { return config_; }
  bool has_classifier() const override { return false; }
  size_t memory_bytes() const override;

  Status HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                      std::vector<uint32_t>* offsets, int threads) const override;
  Status Classify(std::span<const TokenSequence> seqs, float* out, int threads) const override {
    return InvalidInput("a NomicBERT has no classification head");
  }

 private:
  struct Layer;
  NomicBert() = default;
  // The last hidden states of all sequences, packed; offsets as Bert's.
  void Forward(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
               std::vector<uint32_t>* offsets, int threads) const;

  EncoderConfig config_;
  std::unique_ptr<SafeTensors> weights_;
  std::vector<std::vector<float>> converted_;
  const float* word_ = nullptr;
  const float* token_type_ = nullptr;
  const float* emb_ln_gamma_ = nullptr;
  const float* emb_ln_beta_ = nullptr;
  std::vector<Layer> layers_;
  std::vector<float> rope_;  // cos/sin per position (RotaryTable)
  size_t linear_bytes_ = 0;
};

}  // namespace shoal::native
