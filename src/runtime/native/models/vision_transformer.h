// VisionTransformer: the image towers Shoal serves natively, from Hugging
// Face directories (config.json + safetensors):
//   - CLIP's (CLIPModel, CLIPVisionModelWithProjection): the vision model
//     and visual_projection — an image's embedding in the space CLIP's text
//     tower shares;
//   - SigLIP's (SiglipModel, SiglipVisionModel): the vision model and its
//     attention-pooling head (models/attention_pooling_head.h) — the image
//     embedding SiglipModel.get_image_features gives;
//   - ViTForImageClassification's: logits over config.json's id2label;
//   - a vision-language model's (LLaVA's vision_tower, CLIP's or SigLIP's
//     vision model): the hidden states of the layer the model reads
//     (Features), no head.
//
// Both are the same ViT: the image cut into patch × patch squares, each a
// linear map of its pixels (the convolution's kernel, stride = size), a class
// token in front, learned position embeddings added, then pre-norm blocks
// (LayerNorm, self-attention, residual; LayerNorm, MLP, residual). Where they
// differ: CLIP normalizes the embeddings once more before the blocks
// (pre_layrnorm), uses quick_gelu (x · σ(1.702 x)) where ViT uses GELU (erf),
// has no patch bias, and takes the class token through post_layernorm and
// the projection; ViT takes it through its final LayerNorm and the
// classifier. SigLIP has no class token: its patches go through
// post_layernorm and the pooling head, its MLPs use GELU's tanh form.
// Inputs are the image processor's pixel values
// (image/processor.h) at config.json's image_size.
//
// A batch runs packed: every image's (patches + 1) rows in one GEMM per
// layer, attention within each image's rows.
//
// Threading: immutable after Load; Forward may run from several threads at
// once (scratch memory is per call), each call using at most `threads` cores.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "image/processor.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/safetensors.h"
#include "runtime/native/models/attention_pooling_head.h"
#include "runtime/native/models/pre_norm_blocks.h"

namespace shoal::native {

struct VisionConfig {
  enum class Family { kClip, kVit, kSiglip };
  Family family = Family::kClip;
  uint32_t hidden_size = 0, intermediate_size = 0, num_attention_heads = 0, num_hidden_layers = 0;
  uint32_t image_size = 0, patch_size = 0, num_channels = 3;
  BlockActivation act = BlockActivation::kGelu;
  float layer_norm_eps = 1e-5f;
  uint32_t projection_dim = 0;      // CLIP: the embedding's size
  std::vector<std::string> labels;  // ViT: id2label, by id
  bool multi_label = false;         // ViT: problem_type multi_label_classification (a sigmoid per label)
  // A vision-language model's tower: its tensors under `prefix`
  // ("vision_tower."), num_hidden_layers cut to the layer whose states the
  // model reads, no final norm or head; Features gives those states, without
  // the class token when drop_class_token.
  std::string prefix;
  bool features_only = false;
  bool drop_class_token = false;

  // From config.json: CLIP's vision_config (and projection_dim), or a ViT's
  // own fields. Anything Shoal would run otherwise than the checkpoint was
  // trained (another activation, qkv_bias false, an image not divisible into
  // patches) is INVALID_INPUT naming the field.
  static Result<VisionConfig> FromJson(const nlohmann::json& config);
  // A vision-language model's tower from its vision_config (model_type
  // clip_vision_model or siglip_vision_model; `where` names it in errors),
  // reading the states of hidden_states[feature_layer] as transformers
  // counts them (0: the embeddings; -1: the last layer's output).
  static Result<VisionConfig> FeatureTower(const nlohmann::json& vision_config, const std::string& where,
                                           int64_t feature_layer, bool drop_class_token);

  uint32_t patches() const { return (image_size / patch_size) * (image_size / patch_size); }
  bool class_token() const { return family != Family::kSiglip; }
  uint32_t positions() const { return patches() + (class_token() ? 1 : 0); }
  // Rows per image out of Features.
  uint32_t feature_positions() const { return positions() - (drop_class_token ? 1 : 0); }
};

class VisionTransformer {
 public:
  static Result<std::unique_ptr<VisionTransformer>> Load(const std::string& dir, const VisionConfig& config,
                                                         cpu::Precision precision,
                                                         const std::function<void(double)>& progress = {});
  ~VisionTransformer();

  const VisionConfig& config() const { return config_; }
  // Floats per image out of Forward: the embedding's size, or the labels'.
  size_t output_dim() const;
  size_t memory_bytes() const;

  // Each image's output, image after image in `out`. Every image must be
  // channels × image_size × image_size (INVALID_INPUT naming it otherwise).
  Status Forward(std::span<const image::PixelValues> images, std::vector<float>* out, int threads) const;
  // A feature tower's states: per image feature_positions() rows of
  // hidden_size, image after image.
  Status Features(std::span<const image::PixelValues> images, std::vector<float>* out, int threads) const;

 private:
  VisionTransformer() = default;
  // The patches, class token and positions through the blocks: x holds
  // every image's positions() rows after.
  Status RunBlocks(std::span<const image::PixelValues> images, std::vector<float>* x,
                   std::vector<uint32_t>* offsets, int threads) const;

  VisionConfig config_;
  std::unique_ptr<SafeTensors> weights_;
  std::vector<std::vector<float>> converted_;
  std::unique_ptr<cpu::Linear> patch_;  // [C·P·P] → [H], the convolution's kernel as a matrix
  const float* class_embedding_ = nullptr;  // CLIP, ViT
  const float* positions_ = nullptr;        // [positions, H]
  const float* pre_norm_gamma_ = nullptr, *pre_norm_beta_ = nullptr;    // CLIP only
  const float* final_norm_gamma_ = nullptr, *final_norm_beta_ = nullptr;  // post_layernorm / layernorm
  std::unique_ptr<cpu::Linear> head_;  // visual_projection (no bias) or classifier
  std::unique_ptr<AttentionPoolingHead> pooling_;  // SigLIP
  std::unique_ptr<PreNormBlocks> blocks_;
  size_t linear_bytes_ = 0;
};

}  // namespace shoal::native
