#include "image/limits.h"

#include <algorithm>
#include <string>

namespace shoal::image {

Status CheckImageLimits(const ImageHeader& h, size_t encoded_bytes, const ImageLimits& limits) {
  const std::string what = std::string(FormatName(h.format)) + " image of " + std::to_string(h.width) + " × " +
                           std::to_string(h.height) + " pixels";
  if (encoded_bytes > limits.max_bytes) {
    return InvalidInput(what + " is " + std::to_string(encoded_bytes) + " bytes; the limit is " +
                        std::to_string(limits.max_bytes));
  }
  const uint64_t pixels = uint64_t{h.width} * h.height;
  if (pixels > limits.max_pixels) {
    return InvalidInput(what + " has " + std::to_string(pixels) + " pixels; the limit is " +
                        std::to_string(limits.max_pixels) + " (a decompression bomb is refused before decoding)");
  }
  const double ratio = static_cast<double>(std::max(h.width, h.height)) / std::min(h.width, h.height);
  if (ratio > limits.max_aspect_ratio) {
    return InvalidInput(what + " has an aspect ratio of " + std::to_string(static_cast<int64_t>(ratio)) +
                        ":1; the limit is " + std::to_string(static_cast<int64_t>(limits.max_aspect_ratio)) + ":1");
  }
  return Status::Ok();
}

}  // namespace shoal::image
