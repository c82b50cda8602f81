// ImageHeader: what an encoded image says about itself before a pixel is
// decoded — its format, its size, whether it is animated — read from the
// first bytes alone, so that the limits (image/limits.h) refuse a
// decompression bomb before any memory is given to it.
//
// The format is recognised by its signature, never by a file name or a
// declared media type: JPEG (FF D8 FF), PNG (89 "PNG"), WebP ("RIFF" .. "WEBP"),
// GIF ("GIF87a", "GIF89a"). Anything else is INVALID_INPUT naming what was seen.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"
#include "image/image.h"

namespace shoal::image {

struct ImageHeader {
  ImageFormat format = ImageFormat::kJpeg;
  uint32_t width = 0;   // the canvas a decoder writes: a GIF's logical screen
  uint32_t height = 0;
  bool animated = false;  // a WebP with an ANIM chunk (a GIF is not scanned for frames here)
};

Result<ImageHeader> ReadImageHeader(std::string_view bytes);

}  // namespace shoal::image
