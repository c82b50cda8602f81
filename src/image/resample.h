// Resize: images scaled as PIL's Image.resize scales them, value for value.
//
// Hugging Face image processors resize with PIL, so a model's training data
// went through PIL's resampler; a different one (OpenCV's, say, which does
// not widen its kernel when shrinking) shifts every pixel a little and the
// embeddings with them. This is PIL's published algorithm: a separable
// convolution, horizontal pass then vertical, each output sample a weighted
// sum over a window of input samples whose width grows with the shrink
// factor (antialiasing), weights normalized and held as 22-bit fixed point,
// results rounded and clipped to 8 bits after each pass. Nearest takes the
// sample under each output pixel's centre.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "image/image.h"

namespace shoal::image {

// PIL's filter numbers, as preprocessor_config.json's "resample" gives them.
enum class Resample : unsigned char {
  kNearest = 0,
  kLanczos = 1,
  kBilinear = 2,
  kBicubic = 3,
  kBox = 4,
  kHamming = 5,
};

Result<Resample> ResampleFromPil(int number);

Image Resize(const Image& in, uint32_t width, uint32_t height, Resample filter);

}  // namespace shoal::image
