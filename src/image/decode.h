// DecodeImage: encoded bytes to upright RGB pixels, within limits.
//
// JPEG (libjpeg-turbo), PNG (libpng), WebP (libwebp) and GIF (giflib, its
// first frame), the formats Hugging Face image processors meet, decoded as
// PIL decodes them and then `convert("RGB")`s them, so that a model sees
// what it saw in training:
//   - grey and palettes are expanded, alpha is dropped (not composited);
//   - 16-bit PNG samples keep their high byte (PIL does so for RGB; for
//     16-bit grey PIL clips to 255 instead, which Shoal does not copy);
//   - CMYK and YCCK JPEGs become RGB as PIL converts them (Adobe's inverted
//     CMYK read as such);
//   - a GIF is its first frame on its logical screen (outside the frame:
//     the frame's transparent index, else index 0); an animated WebP is
//     refused, since no frame of it stands alone;
//   - the EXIF orientation is applied (JPEG APP1, PNG eXIf, WebP EXIF).
// The header is checked against the limits before a pixel is allocated; a
// truncated or corrupt image, and every decoder error, is INVALID_INPUT
// with the decoder's reason. Thread-safe: no state outside the call.
#pragma once

#include <string_view>

#include "common/status.h"
#include "image/image.h"
#include "image/limits.h"

namespace shoal::image {

Result<Image> DecodeImage(std::string_view bytes, const ImageLimits& limits = {});

}  // namespace shoal::image
