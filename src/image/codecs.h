// The decoders behind DecodeImage (image/decode.h), one file each. Each is
// given bytes whose header has passed the limits, and returns the pixels as
// stored (not yet turned upright) with the EXIF block it found.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "image/header.h"
#include "image/image.h"

namespace shoal::image {

struct DecodedImage {
  Image image;
  std::string exif;  // empty when the file carries none
};

Result<DecodedImage> DecodeJpeg(std::string_view bytes, const ImageHeader& header);
Result<DecodedImage> DecodePng(std::string_view bytes, const ImageHeader& header);
Result<DecodedImage> DecodeWebp(std::string_view bytes, const ImageHeader& header);
Result<DecodedImage> DecodeGif(std::string_view bytes, const ImageHeader& header);

// The decoded size must be the size the header promised (and the limits
// passed); a decoder that disagrees with its own header is a corrupt file.
Status CheckDecodedSize(const ImageHeader& header, uint32_t width, uint32_t height);

}  // namespace shoal::image
