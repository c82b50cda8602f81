// RmsNorm, Rope, SiluMul and ArgMax against naive double-precision
// references, on both ISA paths. (PagedAttention and the rest of a decoder
// step are checked end to end against the torch reference:
// tests/native/decoder_reference_test.cc.)
#include "runtime/native/kernels/cpu/decoder_kernels.h"

#include <gtest/gtest.h>

#include <cmath>

#include "reference.h"

namespace shoal::native::cpu {
namespace {

using testing::ForEachIsa;
using testing::RandomVector;

TEST(RmsNorm, MatchesReference) {
  ForEachIsa([](const char* isa) {
    for (size_t cols : {1ul, 16ul, 33ul, 256ul}) {
      const size_t rows = 20, ld = cols + 3;
      const auto x = RandomVector(rows * ld, 3, -4.0f, 4.0f);
      const auto w = RandomVector(cols, 4, 0.5f, 1.5f);
      std::vector<float> out(rows * cols);
      RmsNorm(x.data(), ld, out.data(), cols, rows, cols, w.data(), 1e-6f, 2);
      for (size_t r = 0; r < rows; ++r) {
        double ms = 0;
        for (size_t i = 0; i < cols; ++i) ms += double(x[r * ld + i]) * x[r * ld + i];
        const double inv = 1 / std::sqrt(ms / cols + 1e-6);
        for (size_t i = 0; i < cols; ++i) {
          EXPECT_NEAR(out[r * cols + i], x[r * ld + i] * inv * w[i], 2e-6 * (1 + std::abs(x[r * ld + i] * inv)))
              << isa << " cols " << cols;
        }
      }
    }
  });
}

TEST(Rope, RotatesEachHalfPairByItsPositionsAngle) {
  const int heads = 3, dim = 8, half = dim / 2;
  const size_t rows = 4, ld = heads * dim + 5;
  const auto x0 = RandomVector(rows * ld, 5, -1.0f, 1.0f);
  const uint32_t positions[rows] = {0, 1, 7, 30};
  std::vector<float> table(31 * dim);
  for (int p = 0; p < 31; ++p) {
    for (int i = 0; i < half; ++i) {
      const double angle = p / std::pow(10000.0, 2.0 * i / dim);
      table[p * dim + i] = static_cast<float>(std::cos(angle));
      table[p * dim + half + i] = static_cast<float>(std::sin(angle));
    }
  }
  auto x = x0;
  Rope(x.data(), ld, rows, heads, dim, positions, table.data(), 2);
  for (size_t r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h) {
      for (int i = 0; i < half; ++i) {
        const double angle = positions[r] / std::pow(10000.0, 2.0 * i / dim);
        const double a = x0[r * ld + h * dim + i], b = x0[r * ld + h * dim + half + i];
        EXPECT_NEAR(x[r * ld + h * dim + i], a * std::cos(angle) - b * std::sin(angle), 1e-6);
        EXPECT_NEAR(x[r * ld + h * dim + half + i], b * std::cos(angle) + a * std::sin(angle), 1e-6);
      }
    }
    // Columns past the heads are left alone.
    for (size_t c = heads * dim; c < ld; ++c) EXPECT_EQ(x[r * ld + c], x0[r * ld + c]);
  }
}

TEST(SiluMul, GatesTheUpHalfByTheSiluOfTheGateHalf) {
  const size_t rows = 3, inter = 37;
  const auto gu = RandomVector(rows * 2 * inter, 6, -8.0f, 8.0f);
  std::vector<float> out(rows * inter);
  SiluMul(gu.data(), rows, inter, out.data(), 2);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < inter; ++i) {
      const double g = gu[r * 2 * inter + i], u = gu[r * 2 * inter + inter + i];
      EXPECT_NEAR(out[r * inter + i], g / (1 + std::exp(-g)) * u, 1e-5 * (1 + std::abs(g * u)));
    }
  }
}

TEST(ArgMax, FindsTheFirstLargest) {
  ForEachIsa([](const char* isa) {
    for (size_t n : {1ul, 15ul, 16ul, 17ul, 151936ul}) {
      auto x = RandomVector(n, static_cast<uint32_t>(n), -10.0f, 10.0f);
      EXPECT_EQ(ArgMax(x.data(), n), static_cast<size_t>(std::max_element(x.begin(), x.end()) - x.begin()))
          << isa << " n=" << n;
      // A tie: the first of the two, wherever they fall.
      x[n / 3] = 20.0f;
      x[n - 1] = 20.0f;
      EXPECT_EQ(ArgMax(x.data(), n), n / 3) << isa << " n=" << n;
    }
  });
}

}  // namespace
}  // namespace shoal::native::cpu
