// Image: decoded pixels as every image model starts from them.
//
// 8-bit RGB, interleaved, rows top to bottom, no padding: what a Hugging Face
// image processor gets from PIL's `convert("RGB")` (alpha dropped, palettes
// and grey expanded), after the EXIF orientation is applied. The decoders
// (image/decode.h) write it; the resampler and the preprocessor read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace shoal::image {

struct Image {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3

  const uint8_t* Pixel(uint32_t x, uint32_t y) const { return &rgb[(static_cast<size_t>(y) * width + x) * 3]; }
  uint8_t* Pixel(uint32_t x, uint32_t y) { return &rgb[(static_cast<size_t>(y) * width + x) * 3]; }
};

// An image of this size, every pixel black.
inline Image BlankImage(uint32_t width, uint32_t height) {
  return Image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, 0)};
}

enum class ImageFormat : unsigned char { kJpeg, kPng, kWebp, kGif };

std::string_view FormatName(ImageFormat format);  // "JPEG", "PNG", "WebP", "GIF"

}  // namespace shoal::image
