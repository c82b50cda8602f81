#include "image/resample.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace shoal::image {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // PIL's fixed point for 8-bit samples

double BoxKernel(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }
double TriangleKernel(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}
double HammingKernel(double x) {
  x = std::fabs(x);
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x *= M_PI;
  return std::sin(x) / x * (0.54 + 0.46 * std::cos(x));
}
double CubicKernel(double x) {  // Keys' cubic with a = -0.5
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}
double Sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}
double LanczosKernel(double x) { return x >= -3.0 && x < 3.0 ? Sinc(x) * Sinc(x / 3) : 0.0; }

struct Kernel {
  double (*weight)(double);
  double support;
};

Kernel KernelOf(Resample f) {
  switch (f) {
    case Resample::kBox: return {BoxKernel, 0.5};
    case Resample::kBilinear: return {TriangleKernel, 1.0};
    case Resample::kHamming: return {HammingKernel, 1.0};
    case Resample::kBicubic: return {CubicKernel, 2.0};
    case Resample::kLanczos: return {LanczosKernel, 3.0};
    case Resample::kNearest: break;
  }
  return {TriangleKernel, 1.0};
}

// For each output sample along one axis: the first input sample of its
// window, and the window's fixed-point weights (`taps` wide, zero-padded).
struct Taps {
  int taps = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

Taps ComputeTaps(uint32_t in_size, uint32_t out_size, Kernel kernel) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = kernel.support * filter_scale;
  Taps t;
  t.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(out_size);
  t.count.resize(out_size);
  t.weights.assign(static_cast<size_t>(out_size) * t.taps, 0);
  std::vector<double> w(static_cast<size_t>(t.taps));
  for (uint32_t o = 0; o < out_size; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);  // truncated, as C casts
    const int hi = std::min(static_cast<int>(center + support + 0.5), static_cast<int>(in_size));
    const int n = hi - lo;
    double sum = 0.0;
    for (int i = 0; i < n; ++i) sum += w[i] = kernel.weight((i + lo - center + 0.5) / filter_scale);
    int32_t* fixed = &t.weights[static_cast<size_t>(o) * t.taps];
    for (int i = 0; i < n; ++i) {
      const double k = (sum != 0.0 ? w[i] / sum : w[i]) * (1 << kPrecisionBits);
      fixed[i] = static_cast<int32_t>(k < 0 ? k - 0.5 : k + 0.5);
    }
    t.first[o] = lo;
    t.count[o] = n;
  }
  return t;
}

uint8_t Clip8(int32_t v) {
  if (v >= (1 << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

// The horizontal pass: each row's pixels from a window of the same row.
Image ResizeWidth(const Image& in, uint32_t width, Kernel kernel) {
  const Taps t = ComputeTaps(in.width, width, kernel);
  Image out = BlankImage(width, in.height);
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
  for (uint32_t y = 0; y < in.height; ++y) {
    const uint8_t* row = in.Pixel(0, y);
    uint8_t* dst = out.Pixel(0, y);
    for (uint32_t x = 0; x < width; ++x, dst += 3) {
      const int32_t* k = &t.weights[static_cast<size_t>(x) * t.taps];
      const uint8_t* src = row + static_cast<size_t>(t.first[x]) * 3;
      int32_t r = kHalf, g = kHalf, b = kHalf;
      for (int i = 0, n = t.count[x]; i < n; ++i, src += 3) {
        r += src[0] * k[i];
        g += src[1] * k[i];
        b += src[2] * k[i];
      }
      dst[0] = Clip8(r), dst[1] = Clip8(g), dst[2] = Clip8(b);
    }
  }
  return out;
}

// The vertical pass: each row from a window of rows, a whole row of sums
// at a time (the loop over its samples vectorizes).
Image ResizeHeight(const Image& in, uint32_t height, Kernel kernel) {
  const Taps t = ComputeTaps(in.height, height, kernel);
  Image out = BlankImage(in.width, height);
  const size_t row = static_cast<size_t>(in.width) * 3;
  std::vector<int32_t> acc(row);
  for (uint32_t y = 0; y < height; ++y) {
    const int32_t* k = &t.weights[static_cast<size_t>(y) * t.taps];
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int i = 0; i < t.count[y]; ++i) {
      const uint8_t* src = in.Pixel(0, static_cast<uint32_t>(t.first[y] + i));
      const int32_t w = k[i];
      for (size_t s = 0; s < row; ++s) acc[s] += src[s] * w;
    }
    uint8_t* dst = out.Pixel(0, y);
    for (size_t s = 0; s < row; ++s) dst[s] = Clip8(acc[s]);
  }
  return out;
}

Image ResizeNearest(const Image& in, uint32_t width, uint32_t height) {
  Image out = BlankImage(width, height);
  const double sx = static_cast<double>(in.width) / width, sy = static_cast<double>(in.height) / height;
  for (uint32_t y = 0; y < height; ++y) {
    const auto iy = std::min(static_cast<uint32_t>((y + 0.5) * sy), in.height - 1);
    for (uint32_t x = 0; x < width; ++x) {
      const auto ix = std::min(static_cast<uint32_t>((x + 0.5) * sx), in.width - 1);
      std::copy_n(in.Pixel(ix, iy), 3, out.Pixel(x, y));
    }
  }
  return out;
}

}  // namespace

Result<Resample> ResampleFromPil(int number) {
  if (number < 0 || number > 5) {
    return InvalidInput("resample " + std::to_string(number) +
                        " is not one of PIL's filters (0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming)");
  }
  return static_cast<Resample>(number);
}

Image Resize(const Image& in, uint32_t width, uint32_t height, Resample filter) {
  if (width == in.width && height == in.height) return in;
  if (filter == Resample::kNearest) return ResizeNearest(in, width, height);
  const Kernel kernel = KernelOf(filter);
  if (width == in.width) return ResizeHeight(in, height, kernel);
  Image wide = ResizeWidth(in, width, kernel);
  return height == in.height ? wide : ResizeHeight(wide, height, kernel);
}

}  // namespace shoal::image
