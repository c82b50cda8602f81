#include "ocr/text_detection.h"

#include <algorithm>
#include <cmath>

namespace shoal::ocr {
namespace {

// The boundary pixels (a 4-neighbour outside the region) of each 8-connected
// region of `text`, at most `max_regions` of them, in scan order.
std::vector<std::vector<Point>> RegionBoundaries(const std::vector<uint8_t>& text, uint32_t w, uint32_t h,
                                                 size_t max_regions) {
  std::vector<int32_t> label(text.size(), -1);
  std::vector<std::vector<Point>> regions;
  std::vector<uint32_t> stack;
  auto on = [&](int64_t x, int64_t y) { return x >= 0 && y >= 0 && x < w && y < h && text[y * w + x]; };
  for (uint32_t start = 0; start < text.size() && regions.size() < max_regions; ++start) {
    if (!text[start] || label[start] >= 0) continue;
    const auto id = static_cast<int32_t>(regions.size());
    std::vector<Point>& boundary = regions.emplace_back();
    label[start] = id;
    stack.assign(1, start);
    while (!stack.empty()) {
      const uint32_t at = stack.back();
      stack.pop_back();
      const int64_t x = at % w, y = at / w;
      if (!on(x - 1, y) || !on(x + 1, y) || !on(x, y - 1) || !on(x, y + 1)) {
        boundary.push_back({static_cast<double>(x), static_cast<double>(y)});
      }
      for (int64_t dy = -1; dy <= 1; ++dy) {
        for (int64_t dx = -1; dx <= 1; ++dx) {
          if (!on(x + dx, y + dy)) continue;
          const auto next = static_cast<uint32_t>((y + dy) * w + x + dx);
          if (label[next] >= 0) continue;
          label[next] = id;
          stack.push_back(next);
        }
      }
    }
  }
  return regions;
}

// The mean probability of the map's pixels inside `q` (box_score_fast).
float MeanInside(std::span<const float> prob, uint32_t w, uint32_t h, const Quad& q) {
  double lo_x = q[0].x, hi_x = q[0].x, lo_y = q[0].y, hi_y = q[0].y;
  for (const Point& p : q) {
    lo_x = std::min(lo_x, p.x), hi_x = std::max(hi_x, p.x), lo_y = std::min(lo_y, p.y), hi_y = std::max(hi_y, p.y);
  }
  const auto clamp = [](double v, uint32_t n) { return static_cast<uint32_t>(std::clamp(v, 0.0, n - 1.0)); };
  double sum = 0;
  size_t count = 0;
  for (uint32_t y = clamp(std::floor(lo_y), h); y <= clamp(std::ceil(hi_y), h); ++y) {
    for (uint32_t x = clamp(std::floor(lo_x), w); x <= clamp(std::ceil(hi_x), w); ++x) {
      if (!Inside(q, {static_cast<double>(x), static_cast<double>(y)})) continue;
      sum += prob[static_cast<size_t>(y) * w + x];
      ++count;
    }
  }
  return count == 0 ? 0.0f : static_cast<float>(sum / count);
}

}  // namespace

std::vector<TextBox> FindTextBoxes(std::span<const float> prob, uint32_t map_w, uint32_t map_h, uint32_t image_w,
                                   uint32_t image_h, const DetectionOptions& o) {
  std::vector<TextBox> boxes;
  if (map_w == 0 || map_h == 0 || prob.size() != static_cast<size_t>(map_w) * map_h) return boxes;
  std::vector<uint8_t> text(prob.size());
  for (size_t i = 0; i < prob.size(); ++i) text[i] = prob[i] > o.threshold;
  const double sx = static_cast<double>(image_w) / map_w, sy = static_cast<double>(image_h) / map_h;
  for (const std::vector<Point>& region : RegionBoundaries(text, map_w, map_h, o.max_candidates)) {
    const Quad box = MinAreaRect(region);
    if (ShortSide(box) < o.min_size) continue;
    const float score = MeanInside(prob, map_w, map_h, box);
    if (score < o.box_threshold) continue;
    const double perimeter = Perimeter(box);
    if (perimeter <= 0) continue;
    const Quad grown = Grow(box, Area(box) * o.unclip_ratio / perimeter);
    if (ShortSide(grown) < o.min_size + 2) continue;
    TextBox t{grown, score};
    for (Point& p : t.quad) {
      p.x = std::clamp(std::round(p.x * sx), 0.0, static_cast<double>(image_w));
      p.y = std::clamp(std::round(p.y * sy), 0.0, static_cast<double>(image_h));
    }
    // Too thin once in the image's pixels (filter_tag_det_res).
    if (std::hypot(t.quad[1].x - t.quad[0].x, t.quad[1].y - t.quad[0].y) <= 3 ||
        std::hypot(t.quad[3].x - t.quad[0].x, t.quad[3].y - t.quad[0].y) <= 3) {
      continue;
    }
    boxes.push_back(t);
  }
  SortReadingOrder(&boxes);
  return boxes;
}

void SortReadingOrder(std::vector<TextBox>* boxes) {
  auto& b = *boxes;
  std::stable_sort(b.begin(), b.end(), [](const TextBox& l, const TextBox& r) {
    return l.quad[0].y < r.quad[0].y || (l.quad[0].y == r.quad[0].y && l.quad[0].x < r.quad[0].x);
  });
  for (size_t i = 0; i + 1 < b.size(); ++i) {
    for (size_t j = i + 1; j-- > 0;) {
      if (std::abs(b[j + 1].quad[0].y - b[j].quad[0].y) < 10 && b[j + 1].quad[0].x < b[j].quad[0].x) {
        std::swap(b[j], b[j + 1]);
      } else {
        break;
      }
    }
  }
}

}  // namespace shoal::ocr
