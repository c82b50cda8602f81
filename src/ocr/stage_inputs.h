// What PaddleOCR's three models take, as its inference code prepares them:
// batches of channels-first float planes in BGR order (the models were
// trained on OpenCV's images), rows top to bottom.
//   - the detector: the image scaled so that its longer side is at most
//     `limit_side` (never enlarged), each side then rounded to a multiple
//     of 32 (at least 32); (v/255 − mean) / std with ImageNet's mean and
//     std (DetResizeForTest, limit_type "max"; NormalizeImage);
//   - the angle classifier: each line scaled to 48 pixels high (its width
//     with it, at most 192) and padded with zeros to 192 wide;
//     (v/255 − 0.5) / 0.5 — except that Shoal shows it a line longer than
//     4:1 as three windows of the line at its own aspect (its start, middle
//     and end, 4:1 each) where PaddleOCR squeezes the whole line into
//     192 × 48: squeezed 7× or more, a line's letters lose their shapes and
//     the classifier turns upright lines upside down (7 of the 43 lines of
//     the OCR benchmark's noisy page; none as windows);
//   - the recognizer: each line scaled to 48 high, the batch as wide as its
//     widest line needs (at least 320, 48 · 320/48), padded with zeros;
//     (v/255 − 0.5) / 0.5.
// Scaling is bilinear (image/resample.h, PIL's, where PaddleOCR uses
// OpenCV's: a difference of a grey level here and there).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "image/image.h"

namespace shoal::ocr {

struct PlaneBatch {
  uint32_t count = 0, height = 0, width = 0;
  std::vector<float> values;  // count × 3 × height × width
};

PlaneBatch DetectorBatch(const image::Image& image, uint32_t limit_side = 960);
// The classifier's windows of `lines`: window i shows line (*line_of)[i].
PlaneBatch ClassifierBatch(std::span<const image::Image> lines, std::vector<uint32_t>* line_of);
PlaneBatch RecognizerBatch(std::span<const image::Image* const> lines);

}  // namespace shoal::ocr
