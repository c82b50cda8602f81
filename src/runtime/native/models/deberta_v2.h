// DeBERTa-v2 and v3 encoders (model_type deberta-v2: the backbone of many
// classifiers, NER models, rerankers and embedders), from a Hugging Face
// directory: config.json + safetensors.
//
// The architecture, against BERT's: disentangled attention. Each score adds
// to q·k a content-to-position term (q·pos_k) and a position-to-content one
// (k·pos_q), where pos_q and pos_k are the relative-position embeddings
// (encoder.rel_embeddings, LayerNormed) through the layer's own query and
// key projections, picked by the distance i − j in log buckets
// (DebertaV2Config::RelativeRow), all scaled by 1/√(head_dim · 3). Positions
// enter only that way in v3 (position_biased_input false); no token types.
// Blocks are BERT's post-norm ones. Heads: the sequence classifier's
// ContextPooler (dense + activation on the first token, then the
// classifier), or a classifier on every token.
//
// pos_q and pos_k depend on the weights alone, so they are computed once at
// load, per layer ([2·span, 2·hidden] floats each: 37 MB for v3-base).
//
// A batch runs packed, as Bert does (bert.h). No LoRA adapters, no GPU yet.
//
// Threading: immutable after Load; every call may run from several threads
// at once (all scratch memory is per call), each using at most `threads`
// cores.
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

class DebertaV2 final : public EncoderNetwork {
 public:
  // `progress` (optional) hears the fraction of layers loaded.
  static Result<std::unique_ptr<DebertaV2>> Load(const std::string& dir, const EncoderConfig& config,
                                                 cpu::Precision precision,
                                                 const std::function<void(double)>& progress = {});
  ~DebertaV2() override;

  const EncoderConfig& config() const override { return config_; }
  bool has_classifier() const override { return classifier_ != nullptr; }
  size_t memory_bytes() const override;

  Status HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                      std::vector<uint32_t>* offsets, int threads) const override;
  Status Classify(std::span<const TokenSequence> seqs, float* out, int threads) const override;
  Status ClassifyTokens(std::span<const TokenSequence> seqs, float* out, int threads) const override;

 private:
  struct Layer;
  DebertaV2() = default;
  // The last hidden states of all sequences, packed; offsets as Bert's.
  void Forward(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
               std::vector<uint32_t>* offsets, int threads) const;

  EncoderConfig config_;
  std::unique_ptr<SafeTensors> weights_;
  std::vector<std::vector<float>> converted_;
  const float* word_ = nullptr;
  const float* position_ = nullptr;    // position_biased_input only
  const float* token_type_ = nullptr;  // type_vocab_size > 0 only
  const float* emb_ln_gamma_ = nullptr;
  const float* emb_ln_beta_ = nullptr;
  std::vector<Layer> layers_;
  // rows_[r + max_tokens − 1]: the relative-embedding row distance r reads.
  std::vector<int32_t> rows_;
  std::unique_ptr<cpu::Linear> pooler_;  // sequence classifiers only
  std::unique_ptr<cpu::Linear> classifier_;
  size_t linear_bytes_ = 0;
  size_t position_bytes_ = 0;
};

}  // namespace shoal::native
