#include "ocr/stage_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "image/resample.h"

namespace shoal::ocr {
namespace {

// Writes `img` (already scaled) into image slot `i` of `b`, BGR planes,
// (v/255 − mean[c]) / std[c], left-aligned; the rest of the slot stays 0.
void Put(const image::Image& img, size_t i, const float mean[3], const float std_dev[3], PlaneBatch* b) {
  const size_t plane = static_cast<size_t>(b->height) * b->width;
  float* slot = b->values.data() + i * 3 * plane;
  for (uint32_t y = 0; y < std::min(img.height, b->height); ++y) {
    for (uint32_t x = 0; x < std::min(img.width, b->width); ++x) {
      const uint8_t* px = img.Pixel(x, y);
      for (int c = 0; c < 3; ++c) {  // plane c holds BGR's c: RGB's 2 − c
        slot[c * plane + static_cast<size_t>(y) * b->width + x] = (px[2 - c] / 255.0f - mean[c]) / std_dev[c];
      }
    }
  }
}

// Scaled to `height` rows, its width with it (rounded up), at most `max_width`.
image::Image ToHeight(const image::Image& line, uint32_t height, uint32_t max_width) {
  const double ratio = static_cast<double>(line.width) / std::max(line.height, 1u);
  const auto w = static_cast<uint32_t>(std::clamp(std::ceil(height * ratio), 1.0, static_cast<double>(max_width)));
  return image::Resize(line, w, height, image::Resample::kBilinear);
}

constexpr float kHalf[3] = {0.5f, 0.5f, 0.5f};

}  // namespace

PlaneBatch DetectorBatch(const image::Image& img, uint32_t limit_side) {
  const uint32_t longer = std::max(img.width, img.height);
  const double ratio = longer > limit_side ? static_cast<double>(limit_side) / longer : 1.0;
  const auto side = [&](uint32_t n) {
    return static_cast<uint32_t>(std::max(32.0, std::round(n * ratio / 32.0) * 32.0));
  };
  PlaneBatch b{1, side(img.height), side(img.width), {}};
  b.values.assign(3ull * b.height * b.width, 0.0f);
  // ImageNet's mean and std, in BGR order as the BGR planes use them.
  static constexpr float kMean[3] = {0.485f, 0.456f, 0.406f}, kStd[3] = {0.229f, 0.224f, 0.225f};
  Put(image::Resize(img, b.width, b.height, image::Resample::kBilinear), 0, kMean, kStd, &b);
  return b;
}

PlaneBatch ClassifierBatch(std::span<const image::Image> lines, std::vector<uint32_t>* line_of) {
  constexpr uint32_t kWindows = 3, kAspect = 192 / 48;
  std::vector<image::Image> windows;
  line_of->clear();
  for (uint32_t i = 0; i < lines.size(); ++i) {
    const image::Image& line = lines[i];
    const uint32_t width = kAspect * std::max(line.height, 1u);
    if (line.width <= width) {
      windows.push_back(ToHeight(line, 48, 192));
      line_of->push_back(i);
      continue;
    }
    for (uint32_t k = 0; k < kWindows; ++k) {
      const auto x0 = static_cast<uint32_t>(uint64_t{line.width - width} * k / (kWindows - 1));
      image::Image window = image::BlankImage(width, line.height);
      for (uint32_t y = 0; y < line.height; ++y) std::memcpy(window.Pixel(0, y), line.Pixel(x0, y), size_t{width} * 3);
      windows.push_back(ToHeight(window, 48, 192));
      line_of->push_back(i);
    }
  }
  PlaneBatch b{static_cast<uint32_t>(windows.size()), 48, 192, {}};
  b.values.assign(static_cast<size_t>(b.count) * 3 * b.height * b.width, 0.0f);
  for (size_t i = 0; i < windows.size(); ++i) Put(windows[i], i, kHalf, kHalf, &b);
  return b;
}

PlaneBatch RecognizerBatch(std::span<const image::Image* const> lines) {
  double widest = 320.0 / 48.0;
  for (const image::Image* line : lines) widest = std::max(widest, static_cast<double>(line->width) / std::max(line->height, 1u));
  PlaneBatch b{static_cast<uint32_t>(lines.size()), 48, static_cast<uint32_t>(48 * widest), {}};
  b.values.assign(static_cast<size_t>(b.count) * 3 * b.height * b.width, 0.0f);
  for (size_t i = 0; i < lines.size(); ++i) Put(ToHeight(*lines[i], b.height, b.width), i, kHalf, kHalf, &b);
  return b;
}

}  // namespace shoal::ocr
