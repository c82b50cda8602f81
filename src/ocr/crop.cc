#include "ocr/crop.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace shoal::ocr {
namespace {

// The homography taking the four `from` points to the four `to` points:
// h[0..7] with h[8] = 1, solved from the eight linear equations by Gaussian
// elimination with partial pivoting.
std::array<double, 9> Homography(const std::array<Point, 4>& from, const std::array<Point, 4>& to) {
  double a[8][9] = {};
  for (int i = 0; i < 4; ++i) {
    const double x = from[i].x, y = from[i].y, u = to[i].x, v = to[i].y;
    double* r = a[2 * i];
    r[0] = x, r[1] = y, r[2] = 1, r[6] = -u * x, r[7] = -u * y, r[8] = u;
    r = a[2 * i + 1];
    r[3] = x, r[4] = y, r[5] = 1, r[6] = -v * x, r[7] = -v * y, r[8] = v;
  }
  for (int c = 0; c < 8; ++c) {
    int pivot = c;
    for (int r = c + 1; r < 8; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    std::swap(a[c], a[pivot]);
    if (std::abs(a[c][c]) < 1e-12) return {1, 0, 0, 0, 1, 0, 0, 0, 1};  // degenerate: identity
    for (int r = 0; r < 8; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int k = c; k < 9; ++k) a[r][k] -= f * a[c][k];
    }
  }
  std::array<double, 9> h{};
  for (int i = 0; i < 8; ++i) h[i] = a[i][8] / a[i][i];
  h[8] = 1;
  return h;
}

image::Image RotateQuarterCounterClockwise(const image::Image& in) {
  image::Image out = image::BlankImage(in.height, in.width);
  for (uint32_t y = 0; y < in.height; ++y) {
    for (uint32_t x = 0; x < in.width; ++x) {
      // (x, y) lands at (y, width − 1 − x), as numpy's rot90.
      std::copy_n(in.Pixel(x, y), 3, out.Pixel(y, in.width - 1 - x));
    }
  }
  return out;
}

}  // namespace

image::Image CropTextLine(const image::Image& img, const Quad& q) {
  const auto length = [](Point a, Point b) { return std::hypot(a.x - b.x, a.y - b.y); };
  const auto w = static_cast<uint32_t>(std::max(length(q[0], q[1]), length(q[2], q[3])));
  const auto h = static_cast<uint32_t>(std::max(length(q[0], q[3]), length(q[1], q[2])));
  if (w == 0 || h == 0 || img.width == 0 || img.height == 0) return image::BlankImage(std::max(w, 1u), std::max(h, 1u));
  const std::array<Point, 4> rect = {Point{0, 0}, Point{static_cast<double>(w), 0},
                                     Point{static_cast<double>(w), static_cast<double>(h)},
                                     Point{0, static_cast<double>(h)}};
  const std::array<double, 9> m = Homography(rect, {q[0], q[1], q[2], q[3]});
  image::Image out = image::BlankImage(w, h);
  const auto sample = [&](double x, double y, uint8_t* px) {
    x = std::clamp(x, 0.0, img.width - 1.0), y = std::clamp(y, 0.0, img.height - 1.0);
    const auto x0 = static_cast<uint32_t>(x), y0 = static_cast<uint32_t>(y);
    const uint32_t x1 = std::min(x0 + 1, img.width - 1), y1 = std::min(y0 + 1, img.height - 1);
    const double fx = x - x0, fy = y - y0;
    for (int c = 0; c < 3; ++c) {
      const double top = img.Pixel(x0, y0)[c] * (1 - fx) + img.Pixel(x1, y0)[c] * fx;
      const double bottom = img.Pixel(x0, y1)[c] * (1 - fx) + img.Pixel(x1, y1)[c] * fx;
      px[c] = static_cast<uint8_t>(std::lround(top * (1 - fy) + bottom * fy));
    }
  };
  for (uint32_t v = 0; v < h; ++v) {
    for (uint32_t u = 0; u < w; ++u) {
      const double d = m[6] * u + m[7] * v + m[8];
      sample((m[0] * u + m[1] * v + m[2]) / d, (m[3] * u + m[4] * v + m[5]) / d, out.Pixel(u, v));
    }
  }
  return h >= 1.5 * w ? RotateQuarterCounterClockwise(out) : out;
}

image::Image WithMargin(const image::Image& line, double margin) {
  const auto add = static_cast<uint32_t>(std::lround(line.height * margin));
  if (add == 0 || line.width == 0) return line;
  uint8_t background[3];
  std::vector<uint8_t> edge(2 * size_t{line.width});
  for (int c = 0; c < 3; ++c) {
    for (uint32_t x = 0; x < line.width; ++x) {
      edge[2 * x] = line.Pixel(x, 0)[c];
      edge[2 * x + 1] = line.Pixel(x, line.height - 1)[c];
    }
    std::nth_element(edge.begin(), edge.begin() + edge.size() / 2, edge.end());
    background[c] = edge[edge.size() / 2];
  }
  image::Image out = image::BlankImage(line.width, line.height + 2 * add);
  for (uint32_t y = 0; y < out.height; ++y) {
    const bool inside = y >= add && y < add + line.height;
    for (uint32_t x = 0; x < out.width; ++x) std::copy_n(inside ? line.Pixel(x, y - add) : background, 3, out.Pixel(x, y));
  }
  return out;
}

image::Image Rotate180(const image::Image& in) {
  image::Image out = image::BlankImage(in.width, in.height);
  for (uint32_t y = 0; y < in.height; ++y) {
    for (uint32_t x = 0; x < in.width; ++x) std::copy_n(in.Pixel(x, y), 3, out.Pixel(in.width - 1 - x, in.height - 1 - y));
  }
  return out;
}

}  // namespace shoal::ocr
