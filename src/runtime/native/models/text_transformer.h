// TextTransformer: the text towers of the two-tower image–text models Shoal
// serves natively (CLIPModel, SiglipModel, from Hugging Face directories):
// token and position embeddings, the pre-norm blocks the image towers use
// (models/pre_norm_blocks.h), a final LayerNorm, one row pooled and
// projected into the space the image tower's embeddings share.
//
// Where the two differ, as transformers runs them:
//   - CLIP attends causally and pools the end-of-text row: the first
//     eos_token_id, or — configs that still say eos_token_id 2, as the
//     original checkpoints do — the row of the largest id (the tokenizer's
//     <|endoftext|> is its last). Its projection has no bias. Each sequence
//     runs at its own length: causality makes padding irrelevant.
//   - SigLIP attends over the whole sequence, which it was trained on padded
//     to max_position_embeddings with pad_token_id and no mask (its
//     processor's padding="max_length"), so every text runs padded so; it
//     pools the last row, and its head has a bias.
//
// Threading: immutable after Load; Forward may run from several threads at
// once, each call using at most `threads` cores.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/safetensors.h"
#include "runtime/native/models/pre_norm_blocks.h"

namespace shoal::native {

struct TextTowerConfig {
  enum class Family { kClip, kSiglip };
  Family family = Family::kClip;
  uint32_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_attention_heads = 0,
           num_hidden_layers = 0, max_position_embeddings = 0;
  BlockActivation act = BlockActivation::kQuickGelu;
  float layer_norm_eps = 1e-5f;
  uint32_t projection_dim = 0;  // the shared embedding's size
  int32_t pad_token_id = 1;     // SigLIP pads with it
  int32_t eos_token_id = 2;     // CLIP pools its row

  // From a CLIPModel's or SiglipModel's config.json (text_config, with each
  // transformers class's defaults); another architecture, or a field Shoal
  // would run otherwise than the checkpoint was trained, is INVALID_INPUT.
  static Result<TextTowerConfig> FromJson(const nlohmann::json& config);

  bool causal() const { return family == Family::kClip; }
};

// Whether config.json's architecture has a text tower Shoal runs.
bool HasTextTower(const nlohmann::json& config);

class TextTransformer {
 public:
  static Result<std::unique_ptr<TextTransformer>> Load(const std::string& dir, const TextTowerConfig& config,
                                                       cpu::Precision precision,
                                                       const std::function<void(double)>& progress = {});
  ~TextTransformer();

  const TextTowerConfig& config() const { return config_; }
  size_t output_dim() const { return config_.projection_dim; }
  size_t memory_bytes() const { return bytes_; }

  // Each sequence's embedding (not normalized), one after another in `out`.
  // A sequence must hold 1 to max_position_embeddings ids below vocab_size
  // (INVALID_INPUT naming it otherwise).
  Status Forward(std::span<const std::vector<int32_t>> sequences, std::vector<float>* out, int threads) const;

 private:
  TextTransformer() = default;
  // The row CLIP pools in `ids`.
  size_t PooledRow(std::span<const int32_t> ids) const;

  TextTowerConfig config_;
  std::unique_ptr<SafeTensors> weights_;
  std::vector<std::vector<float>> converted_;
  const float* tokens_ = nullptr;     // [vocab, H]
  const float* positions_ = nullptr;  // [max_positions, H]
  const float* final_gamma_ = nullptr, *final_beta_ = nullptr;
  std::unique_ptr<PreNormBlocks> blocks_;
  std::unique_ptr<cpu::Linear> projection_;  // CLIP's text_projection, SigLIP's head
  size_t bytes_ = 0;
};

}  // namespace shoal::native
