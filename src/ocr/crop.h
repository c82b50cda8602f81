// A text line cut out of its image, straightened: the pixels under a
// detected box (any rotation) warped onto an upright rectangle, as
// PaddleOCR's get_rotate_crop_image does — the rectangle's width the longer
// of the box's top and bottom edges, its height the longer of its sides; a
// perspective map from the rectangle back into the image, sampled
// bilinearly with the image's edge pixels repeated outside it; then turned
// a quarter counter-clockwise when the line is at least 1.5 times taller
// than wide (vertical text).
#pragma once

#include "image/image.h"
#include "ocr/geometry.h"

namespace shoal::ocr {

image::Image CropTextLine(const image::Image& image, const Quad& box);

// `line` with `margin` × its height added above and below, in its
// background colour (the median of its top and bottom rows, per channel).
image::Image WithMargin(const image::Image& line, double margin);

// Turned half a turn (the angle classifier's "180").
image::Image Rotate180(const image::Image& image);

}  // namespace shoal::ocr
