// ImagePromptEncoder: what a vision-language model (LLaVA,
// LlavaForConditionalGeneration) makes of an image for its decoder — the
// rows that stand in the prompt where the image's placeholder token is:
//
//   pixels = the image processor (preprocessor_config.json) on the decoded image
//   states = hidden_states[vision_feature_layer] of the vision tower (CLIP's
//            or SigLIP's vision model, models/vision_transformer.h), without
//            the class token when vision_feature_select_strategy is "default"
//   rows   = linear_2(gelu(linear_1(states)))       the multi_modal_projector
//
// From config.json: image_token_index (or image_token_id), vision_config,
// vision_feature_layer (one layer: a list of them is refused),
// vision_feature_select_strategy ("default" or "full"), projector_hidden_act
// (gelu). The tensors are under vision_tower. and multi_modal_projector. (as
// the Hub's checkpoints have them) or the same under model. (as transformers
// ≥ 4.52 saves them). One image size: the processor's, the tower's
// image_size (LLaVA-NeXT's tiles are not read).
//
// Threading: immutable after Load; Embed may run from several threads.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "image/limits.h"
#include "image/processor.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/safetensors.h"
#include "runtime/native/models/vision_transformer.h"

namespace shoal::native {

class ImagePromptEncoder {
 public:
  // `config`: the model's config.json; `text_hidden`: its decoder's width.
  static Result<std::unique_ptr<ImagePromptEncoder>> Load(const std::string& dir,
                                                          const nlohmann::json& config,
                                                          size_t text_hidden,
                                                          cpu::Precision precision);
  ~ImagePromptEncoder();

  int32_t image_token() const { return image_token_; }
  // Rows per image.
  uint32_t positions() const { return tower_->config().feature_positions(); }
  size_t memory_bytes() const;

  // The image's rows: positions() × the decoder's width. INVALID_INPUT
  // when it does not decode or passes the image limits.
  Result<std::vector<float>> Embed(std::string_view encoded, int threads) const;

 private:
  ImagePromptEncoder() = default;

  int32_t image_token_ = -1;
  image::ImageLimits limits_;
  std::unique_ptr<image::ImageProcessor> processor_;
  std::unique_ptr<VisionTransformer> tower_;
  std::unique_ptr<SafeTensors> weights_;  // the projector's
  std::vector<std::vector<float>> converted_;
  std::unique_ptr<cpu::Linear> linear_1_, linear_2_;
};

}  // namespace shoal::native
