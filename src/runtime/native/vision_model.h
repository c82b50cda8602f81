// VisionModel: an image tower (models/vision_transformer.h) — and, for a
// two-tower image–text model, its text tower (models/text_transformer.h) —
// behind the runtime contract. Images (EncodeInput::image, ExtractInput::image,
// ScoreInput::image) are decoded and prepared here as the model's
// preprocessor_config.json says (image/decode.h, image/processor.h); texts
// are tokenized by the directory's tokenizer.json. Each tower runs its
// inputs as one batch:
//   - CLIP's and SigLIP's towers encode: an image's or a text's embedding in
//     the space both share (unit length when the input asks to normalize),
//     on /v1/encode and /v1/embeddings; the vision-only classes
//     (CLIPVisionModelWithProjection, SiglipVisionModel) take images alone;
//   - a two-tower model (CLIPModel, SiglipModel) also scores a text against
//     an image: its logit, exp(logit_scale) · cos(text, image) (+ logit_bias
//     for SigLIP), as the model's forward gives logits_per_text;
//   - a ViT image classifier extracts: its labels with softmax scores, best
//     first, top_k of them when asked, on /v1/extract.
// An input of a kind the model does not take, an image that does not decode
// or passes the image limits, a text over the tower's positions (unless it
// truncates) fails alone with INVALID_INPUT naming why. `tokens` reports the
// positions a tower saw: the patches (and a class token but in SigLIP) of an
// image, the tokens of a text (before SigLIP's padding).
//
// Threading: immutable after Load; calls may run concurrently.
#pragma once

#include <memory>

#include "image/limits.h"
#include "image/processor.h"
#include "runtime/native/models/text_transformer.h"
#include "runtime/native/models/vision_transformer.h"
#include "runtime/native/native_options.h"
#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/runtime.h"

namespace shoal::native {

// Whether config.json names an image model the native runtime runs.
bool IsVisionConfig(const std::string& dir);

class VisionModel final : public Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const ModelConfig& spec, const NativeOptions& options,
                                             const LoadContext& ctx);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override;
  bool takes_images() const override { return true; }
  bool takes_text() const override { return text_ != nullptr; }

  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override;
  Status Score(std::span<const ScoreInput> in, std::span<ScoreOutput> out) override;
  Status Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) override;
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override;

 private:
  // What one tower made of a list of inputs: each one's status, and where
  // it is ok its output at vectors[i * dim] and what the tower saw.
  struct TowerRun {
    std::vector<Status> statuses;
    std::vector<float> vectors;
    std::vector<uint32_t> tokens;
    std::vector<uint8_t> truncated;
  };

  VisionModel() = default;

  // Decodes and prepares each image and runs those that decoded through the
  // image tower as one batch.
  Status RunImages(std::span<const std::string_view> images, TowerRun* run) const;
  // Tokenizes each text (cut to the tower's length when truncate[i]) and
  // runs those that tokenized through the text tower as one batch.
  Status RunTexts(std::span<const std::string_view> texts, std::span<const uint8_t> truncate, TowerRun* run) const;

  ModelConfig config_;
  std::unique_ptr<VisionTransformer> tower_;
  std::unique_ptr<image::ImageProcessor> processor_;
  image::ImageLimits limits_;
  // Two-tower models only.
  std::unique_ptr<TextTransformer> text_;
  std::unique_ptr<Tokenizer> tokenizer_;
  size_t max_tokens_ = 0;
  float logit_scale_ = 1.0f;  // exp of the checkpoint's logit_scale
  float logit_bias_ = 0.0f;   // SigLIP's
  int threads_ = 1;
};

}  // namespace shoal::native
