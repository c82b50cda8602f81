#include "image/decode.h"

#include <string>
#include <utility>

#include "image/codecs.h"
#include "image/header.h"
#include "image/orientation.h"

namespace shoal::image {

Status CheckDecodedSize(const ImageHeader& h, uint32_t width, uint32_t height) {
  if (width == h.width && height == h.height) return Status::Ok();
  return InvalidInput(std::string(FormatName(h.format)) + " image decodes to " + std::to_string(width) + " × " +
                      std::to_string(height) + " pixels but its header says " + std::to_string(h.width) + " × " +
                      std::to_string(h.height));
}

namespace {

Result<DecodedImage> DecodeFormat(std::string_view bytes, const ImageHeader& header) {
  switch (header.format) {
    case ImageFormat::kJpeg: return DecodeJpeg(bytes, header);
    case ImageFormat::kPng: return DecodePng(bytes, header);
    case ImageFormat::kWebp: return DecodeWebp(bytes, header);
    case ImageFormat::kGif: return DecodeGif(bytes, header);
  }
  return Internal("no decoder for this image format");
}

}  // namespace

Result<Image> DecodeImage(std::string_view bytes, const ImageLimits& limits) {
  SHOAL_ASSIGN_OR_RETURN(const ImageHeader header, ReadImageHeader(bytes));
  if (Status s = CheckImageLimits(header, bytes.size(), limits); !s.ok()) return s;
  SHOAL_ASSIGN_OR_RETURN(DecodedImage decoded, DecodeFormat(bytes, header));
  return Orient(std::move(decoded.image), ExifOrientation(decoded.exif));
}

}  // namespace shoal::image
