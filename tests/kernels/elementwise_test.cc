// Activate, GeluMul, MeanPool, L2Normalize and the bf16/f16 conversions.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "reference.h"

namespace shoal::native::cpu {
namespace {

using testing::ActivateRef;
using testing::ActivationName;
using testing::ForEachIsa;
using testing::RandomVector;

TEST(Activate, MatchesReference) {
  ForEachIsa([](const char* isa) {
    for (size_t n : {1ul, 15ul, 16ul, 17ul, 1000ul, 4099ul}) {
      // Wide range: saturation of tanh / erf and large negative GELU inputs.
      const auto x = RandomVector(n, static_cast<uint32_t>(n), -12.0f, 12.0f);
      for (Activation act : {Activation::kNone, Activation::kGelu, Activation::kGeluTanh,
                             Activation::kRelu, Activation::kTanh}) {
        auto y = x;
        Activate(y.data(), n, act);
        std::vector<double> ref(n);
        for (size_t i = 0; i < n; ++i) ref[i] = ActivateRef(x[i], act);
        // Absolute, on outputs up to 12: erf / exp approximations stay ≤ ~1e-6.
        EXPECT_LE(testing::MaxAbsDiff(y, ref), 4e-6f)
            << isa << " " << ActivationName(act) << " n=" << n;
      }
    }
  });
}

TEST(Activate, SmallInputsAreAccurate) {
  ForEachIsa([](const char* isa) {
    const auto x = RandomVector(1000, 3, -0.01f, 0.01f);
    for (Activation act : {Activation::kGelu, Activation::kGeluTanh, Activation::kTanh}) {
      auto y = x;
      Activate(y.data(), y.size(), act);
      std::vector<double> ref(x.size());
      for (size_t i = 0; i < x.size(); ++i) ref[i] = ActivateRef(x[i], act);
      EXPECT_LE(testing::MaxAbsDiff(y, ref), 2e-7f) << isa << " " << ActivationName(act);
    }
  });
}

// GeGLU: gelu of the first half of each row times its second half.
TEST(GeluMul, MatchesReference) {
  ForEachIsa([](const char* isa) {
    for (auto [rows, inter] : {std::pair<size_t, size_t>{1, 5}, {7, 96}, {300, 1152}}) {
      const auto x = RandomVector(rows * 2 * inter, static_cast<uint32_t>(rows + inter), -6.0f, 6.0f);
      std::vector<double> ref(rows * inter);
      for (size_t r = 0; r < rows; ++r) {
        for (size_t i = 0; i < inter; ++i) {
          ref[r * inter + i] = ActivateRef(x[r * 2 * inter + i], Activation::kGelu) * x[r * 2 * inter + inter + i];
        }
      }
      for (int threads : {1, 2}) {
        std::vector<float> out(rows * inter, NAN);
        GeluMul(x.data(), rows, inter, out.data(), threads);
        EXPECT_LE(testing::MaxAbsDiff(out, ref), 3e-5f) << isa << " rows=" << rows << " inter=" << inter;
      }
    }
  });
}

TEST(MeanPool, MatchesReference) {
  const std::vector<uint32_t> off{0, 1, 1, 18, 21};
  const size_t cols = 37;
  const auto x = RandomVector(off.back() * cols, 4);
  std::vector<float> out(4 * cols, NAN);
  MeanPool(x.data(), cols, off, out.data());
  for (size_t s = 0; s + 1 < off.size(); ++s) {
    for (size_t c = 0; c < cols; ++c) {
      double acc = 0;
      for (size_t r = off[s]; r < off[s + 1]; ++r) acc += x[r * cols + c];
      const double want = off[s + 1] > off[s] ? acc / (off[s + 1] - off[s]) : 0.0;
      EXPECT_NEAR(out[s * cols + c], want, 1e-6) << "seq " << s;
    }
  }
}

TEST(L2Normalize, UnitNormAndZeroVector) {
  for (size_t n : {1ul, 3ul, 384ul, 1001ul}) {
    auto v = RandomVector(n, static_cast<uint32_t>(n), -3.0f, 3.0f);
    const auto orig = v;
    L2Normalize(v.data(), n);
    double norm = 0, dot = 0;
    for (size_t i = 0; i < n; ++i) norm += static_cast<double>(v[i]) * v[i];
    for (size_t i = 0; i < n; ++i) dot += static_cast<double>(orig[i]) * orig[i];
    EXPECT_NEAR(norm, 1.0, 1e-6);
    for (size_t i = 0; i < n; ++i) EXPECT_NEAR(v[i], orig[i] / std::sqrt(dot), 1e-6);
  }
  std::vector<float> z(5, 0.0f);
  L2Normalize(z.data(), z.size());
  for (float f : z) EXPECT_EQ(f, 0.0f);
}

TEST(Conversions, Bf16ToF32IsExact) {
  std::vector<uint16_t> in(65536);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint16_t>(i);
  std::vector<float> out(in.size());
  Bf16ToF32(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), static_cast<uint32_t>(i) << 16) << i;
  }
}

TEST(Conversions, F16ToF32AllValues) {
  ForEachIsa([](const char* isa) {
    std::vector<uint16_t> in(65536);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint16_t>(i);
    std::vector<float> out(in.size() + 3);
    // Odd count and offset: exercises the masked tail.
    F16ToF32(in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const int e = (i >> 10) & 0x1f;
      const int m = i & 0x3ff;
      const double sign = (i & 0x8000) ? -1.0 : 1.0;
      if (e == 0x1f) {
        if (m == 0) {
          ASSERT_TRUE(std::isinf(out[i]) && std::signbit(out[i]) == (sign < 0)) << isa << " " << i;
        } else {
          ASSERT_TRUE(std::isnan(out[i])) << isa << " " << i;
        }
        continue;
      }
      const double want = e == 0 ? sign * std::ldexp(m, -24) : sign * std::ldexp(1024 + m, e - 25);
      ASSERT_EQ(static_cast<double>(out[i]), want) << isa << " " << i;
      ASSERT_EQ(std::signbit(out[i]), sign < 0) << isa << " " << i;
    }
    std::vector<float> tail(7);
    F16ToF32(in.data() + 0x3c00, tail.data(), 7);  // 1.0, 1.0009765625, ...
    EXPECT_EQ(tail[0], 1.0f) << isa;
  });
}

}  // namespace
}  // namespace shoal::native::cpu
