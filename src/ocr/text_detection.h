// Text boxes from a DB (Differentiable Binarization) detector's probability
// map, as PaddleOCR's DBPostProcess finds them: pixels over `threshold` are
// text; each connected region (8-neighbours) becomes its minimum-area
// rectangle; a rectangle whose shorter side is under `min_size`, or whose
// mean probability (over the map's pixels inside it) is under
// `box_threshold`, is dropped; the others are "unclipped" — grown by
// area · unclip_ratio / perimeter on every side, since DB learns to shrink
// text regions — and scaled from the map to the image. Boxes come back in
// reading order (top to bottom; left to right within 10 pixels of height).
//
// Pure functions, no state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ocr/geometry.h"

namespace shoal::ocr {

struct DetectionOptions {
  float threshold = 0.3f;       // DBPostProcess's thresh
  float box_threshold = 0.6f;   // box_thresh
  double unclip_ratio = 1.5;
  size_t max_candidates = 1000;
  double min_size = 3;
};

struct TextBox {
  Quad quad;        // in the image's pixels
  float score = 0;  // the region's mean probability
};

// prob: map_height rows of map_width probabilities; boxes in an image of
// image_width × image_height (the map covers all of it).
std::vector<TextBox> FindTextBoxes(std::span<const float> prob, uint32_t map_width, uint32_t map_height,
                                   uint32_t image_width, uint32_t image_height, const DetectionOptions& options = {});

// PaddleOCR's sorted_boxes: by the top-left corner's y then x, then a box
// whose top is within 10 pixels of the one before it and left of it moves
// before it.
void SortReadingOrder(std::vector<TextBox>* boxes);

}  // namespace shoal::ocr
