// WebP through libwebp: a still image (lossy, lossless, with or without
// alpha), decoded to RGB with alpha dropped as PIL's `convert("RGB")` drops
// it. An animated WebP is refused: PIL would give its first frame, but a
// frame after the first is only a patch on the canvas, and a client that
// sends an animation to an image model has most likely sent the wrong file.
#include <webp/decode.h>

#include <cstring>
#include <string>

#include "image/codecs.h"

namespace shoal::image {
namespace {

uint32_t ChunkSize(const unsigned char* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

// The EXIF chunk of an extended WebP, found by walking the RIFF chunks.
std::string FindExif(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t at = 12; at + 8 <= bytes.size();) {
    const size_t size = ChunkSize(p + at + 4);
    if (size > bytes.size() - at - 8) break;
    if (std::memcmp(p + at, "EXIF", 4) == 0) return std::string(bytes.substr(at + 8, size));
    at += 8 + size + (size & 1);
  }
  return "";
}

}  // namespace

Result<DecodedImage> DecodeWebp(std::string_view bytes, const ImageHeader& header) {
  if (header.animated) {
    return InvalidInput("WebP image is animated; send a single still image (a frame as PNG, JPEG or still WebP)");
  }
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(data, bytes.size(), &features) != VP8_STATUS_OK) {
    return InvalidInput("WebP image cannot be decoded: its headers are corrupt or truncated");
  }
  SHOAL_RETURN_IF_ERROR(CheckDecodedSize(header, static_cast<uint32_t>(features.width),
                                         static_cast<uint32_t>(features.height)));
  DecodedImage out;
  out.image = BlankImage(header.width, header.height);
  const int stride = static_cast<int>(header.width * 3);
  if (!WebPDecodeRGBInto(data, bytes.size(), out.image.rgb.data(), out.image.rgb.size(), stride)) {
    return InvalidInput("WebP image cannot be decoded: its data is corrupt or truncated");
  }
  out.exif = FindExif(bytes);
  return out;
}

}  // namespace shoal::image
