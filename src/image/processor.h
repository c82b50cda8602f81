// ImageProcessor: a decoded image to the pixel values a vision model takes,
// as the model's preprocessor_config.json says and as Hugging Face's image
// processors compute them: resize (PIL's resampler, image/resample.h), centre
// crop, rescale and normalize, channels first.
//
// The processors of the models Shoal serves natively:
//   - CLIPImageProcessor (and CLIPFeatureExtractor): the shortest edge to
//     `size`, then a centre crop to `crop_size`; an integer `size` is the
//     shortest edge;
//   - SiglipImageProcessor, ViTImageProcessor (and ViTFeatureExtractor): a
//     resize to `size` exactly; an integer `size` is a square.
// A key the config leaves out takes that processor's default (CLIP's OpenAI
// mean and std, bicubic; ViT bilinear; SigLIP bicubic; 224 pixels). Another
// processor type, a `do_*` step not listed here set to true, or a size of an
// unknown shape is INVALID_INPUT at load, naming the key: a model is never
// fed pixels prepared otherwise than it was trained on. Images are always
// RGB (`do_convert_rgb` is read, and RGB is what image/decode.h gives).
//
// Arithmetic as transformers does it: resize and crop on 8-bit samples,
// rescale in float64 then cast to float32, normalize in float32.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "image/image.h"
#include "image/resample.h"

namespace shoal::image {

// A model's input: 3 × height × width floats, channels first.
struct PixelValues {
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<float> chw;
};

class ImageProcessor {
 public:
  static Result<ImageProcessor> FromConfig(const nlohmann::json& config);

  PixelValues Apply(const Image& image) const;

  // The size every output has; 0 when it follows the input's aspect (the
  // shortest edge resized, no crop).
  uint32_t height() const { return crop_ ? crop_height_ : shortest_edge_ ? 0 : height_; }
  uint32_t width() const { return crop_ ? crop_width_ : shortest_edge_ ? 0 : width_; }

 private:
  ImageProcessor() = default;

  bool resize_ = true;
  bool shortest_edge_ = false;  // resize the shorter side to height_ (= width_), keeping the aspect
  uint32_t height_ = 224, width_ = 224;
  Resample resample_ = Resample::kBicubic;
  bool crop_ = false;
  uint32_t crop_height_ = 224, crop_width_ = 224;
  bool rescale_ = true;
  double rescale_factor_ = 1.0 / 255.0;
  bool normalize_ = true;
  std::array<float, 3> mean_{0.5f, 0.5f, 0.5f}, std_{0.5f, 0.5f, 0.5f};
};

}  // namespace shoal::image
