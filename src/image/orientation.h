// EXIF orientation: cameras store pixels as the sensor read them and say in
// EXIF tag 0x0112 how to turn them upright. Image processors see the image
// upright (Hugging Face's load_image applies PIL's ImageOps.exif_transpose),
// so the decoders apply it before anything else reads the pixels.
#pragma once

#include <string_view>

#include "image/image.h"

namespace shoal::image {

// The orientation (1–8) an EXIF block gives: the block as JPEG's APP1
// carries it ("Exif\0\0" and a TIFF structure) or the TIFF structure alone
// (PNG's eXIf, WebP's EXIF chunk). 1 (upright) when it has no orientation or
// cannot be read: a broken EXIF block does not fail an image whose pixels are
// whole.
int ExifOrientation(std::string_view exif);

// The image turned upright: 2 mirrored, 3 turned 180°, 4 flipped, 5
// transposed, 6 turned 90° clockwise, 7 transversed, 8 turned 90°
// counter-clockwise (5–8 swap width and height).
Image Orient(Image image, int orientation);

}  // namespace shoal::image
