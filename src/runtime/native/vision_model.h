// VisionModel: an image tower (models/vision_transformer.h) behind the
// runtime contract. Its inputs are encoded images (EncodeInput::image,
// ExtractInput::image), decoded and prepared here as the model's
// preprocessor_config.json says (image/decode.h, image/processor.h), then
// run as one batch:
//   - CLIP's and SigLIP's vision towers encode: the image's embedding (unit
//     length when the input asks to normalize), on /v1/encode and
//     /v1/embeddings;
//   - a ViT image classifier extracts: its labels with softmax scores, best
//     first, top_k of them when asked, on /v1/extract.
// A text input is refused (it takes images only); an image that does not
// decode, or passes the image limits, fails alone with INVALID_INPUT naming
// why. Images are not tokens: `tokens` reports the positions the tower saw
// (the patches, and a class token but in SigLIP), `truncate` changes nothing.
//
// Threading: immutable after Load; calls may run concurrently.
#pragma once

#include <memory>

#include "image/limits.h"
#include "image/processor.h"
#include "runtime/native/models/vision_transformer.h"
#include "runtime/native/native_options.h"
#include "runtime/runtime.h"

namespace shoal::native {

// Whether config.json names an image model the native runtime runs.
bool IsVisionConfig(const std::string& dir);

class VisionModel final : public Model {
 public:
  static Result<std::unique_ptr<Model>> Load(const ModelConfig& spec, const NativeOptions& options,
                                             const LoadContext& ctx);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return tower_->memory_bytes(); }
  bool takes_images() const override { return true; }
  bool takes_text() const override { return false; }

  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override;
  Status Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) override;

 private:
  VisionModel() = default;

  // Decodes and prepares each image (an empty one is a text input, refused)
  // and runs those that decoded through the tower as one batch: input i's
  // status in statuses[i], its outputs (when ok) at outputs[i * dim].
  Status Run(std::span<const std::string_view> images, std::vector<Status>* statuses,
             std::vector<float>* outputs) const;

  ModelConfig config_;
  std::unique_ptr<VisionTransformer> tower_;
  std::unique_ptr<image::ImageProcessor> processor_;
  image::ImageLimits limits_;
  int threads_ = 1;
};

}  // namespace shoal::native
