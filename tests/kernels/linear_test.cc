// Linear (fp32 and bf16, both weight layouts, fused bias + activation) against
// a double-precision reference.
//
// Bounds. fp32: max abs error ≤ 2e-5 · (1 + max|y|) on O(1) data (observed
// ~1e-6). bf16: x and W are rounded to bf16 (relative error ≤ 2^-9 each), so
// each product is off by ≤ ~2^-8 of its magnitude and, through an activation
// of slope ≤ 1.13 (erf GELU's steepest), every output obeys
//   |y − y_ref| ≤ 1.13 · 2^-8 · Σ_k |x_k·w_k| + 1e-5;
// relative to the output's magnitude, on random data the max abs error stays
// under 1% of max|y_ref| (observed ~0.3%), which is the bound we state.
// int8: with s_x = max|x_row|/127 and s_w = max|w_col|/127, each product
// x·w is off by ≤ |x|·s_w/2 + s_x·|w|/2 + s_x·s_w/4 (the int32 sum is exact),
// so |y − y_ref| ≤ 1.13 · Σ_k (|x_k|·s_w + s_x·|w_k| + s_x·s_w/2) / 2 + 1e-5.
#include <gtest/gtest.h>

#include <thread>

#include "reference.h"

namespace shoal::native::cpu {
namespace {

using testing::ActivateRef;
using testing::ActivationName;
using testing::RandomVector;

struct Shape {
  size_t rows, in, out;
};

// [out][in] weights, scaled so outputs are O(1).
std::vector<float> Weights(size_t in, size_t out, uint32_t seed) {
  const float s = 1.0f / std::sqrt(static_cast<float>(in));
  return RandomVector(in * out, seed, -s * 1.7f, s * 1.7f);
}

std::vector<float> ToInOut(const std::vector<float>& w_oi, size_t in, size_t out) {
  std::vector<float> t(in * out);
  for (size_t o = 0; o < out; ++o)
    for (size_t i = 0; i < in; ++i) t[i * out + o] = w_oi[o * in + i];
  return t;
}

// Reference y, Σ|x·w| per output, and the int8 error bound per output
// (before the activation's slope).
void Reference(const std::vector<float>& x, const std::vector<float>& w_oi, const float* bias,
               const Shape& s, Activation act, std::vector<double>& y, std::vector<double>& l1,
               std::vector<double>& int8_bound) {
  y.assign(s.rows * s.out, 0.0);
  l1.assign(s.rows * s.out, 0.0);
  int8_bound.assign(s.rows * s.out, 0.0);
  for (size_t r = 0; r < s.rows; ++r) {
    double sx = 0.0;
    for (size_t i = 0; i < s.in; ++i) sx = std::max(sx, std::abs(double{x[r * s.in + i]}) / 127.0);
    for (size_t o = 0; o < s.out; ++o) {
      double sw = 0.0;
      for (size_t i = 0; i < s.in; ++i) sw = std::max(sw, std::abs(double{w_oi[o * s.in + i]}) / 127.0);
      double acc = bias ? bias[o] : 0.0, abs = 0.0, q = 0.0;
      for (size_t i = 0; i < s.in; ++i) {
        const double xi = x[r * s.in + i], wi = w_oi[o * s.in + i];
        acc += xi * wi;
        abs += std::abs(xi * wi);
        q += (std::abs(xi) * sw + sx * std::abs(wi) + sx * sw / 2) / 2;
      }
      y[r * s.out + o] = ActivateRef(acc, act);
      l1[r * s.out + o] = abs;
      int8_bound[r * s.out + o] = q;
    }
  }
}

size_t BytesPerWeight(Precision prec) {
  return prec == Precision::kF32 ? 4 : prec == Precision::kBF16 ? 2 : 1;
}

const Shape kShapes[] = {{1, 1, 1},       {1, 384, 1152},  {3, 7, 5},       {17, 33, 65},
                         {31, 64, 16},    {128, 384, 384}, {129, 768, 768}, {5, 3072, 768},
                         {200, 17, 1001}, {300, 64, 48},   {513, 33, 17}};  // > 1 chunk of 256
const Activation kActs[] = {Activation::kNone, Activation::kGelu, Activation::kGeluTanh,
                            Activation::kRelu, Activation::kTanh};

class LinearTest : public ::testing::TestWithParam<Precision> {};

TEST_P(LinearTest, MatchesReferenceBothLayouts) {
  const Precision prec = GetParam();
  uint32_t seed = 1;
  double worst_rel = 0.0;
  for (const Shape& s : kShapes) {
    const auto w = Weights(s.in, s.out, seed++);
    const auto w_io = ToInOut(w, s.in, s.out);
    const auto bias = RandomVector(s.out, seed++, -0.5f, 0.5f);
    const auto x = RandomVector(s.rows * s.in, seed++);
    for (const bool with_bias : {true, false}) {
      const float* b = with_bias ? bias.data() : nullptr;
      auto oi = Linear::Create(w.data(), WeightLayout::kOutIn, s.in, s.out, b, prec);
      auto io = Linear::Create(w_io.data(), WeightLayout::kInOut, s.in, s.out, b, prec);
      ASSERT_TRUE(oi.ok()) << oi.status().ToString();
      ASSERT_TRUE(io.ok()) << io.status().ToString();
      EXPECT_EQ((*oi)->in(), s.in);
      EXPECT_EQ((*oi)->out(), s.out);
      EXPECT_GE((*oi)->memory_bytes(), s.in * s.out * BytesPerWeight(prec));
      for (const Activation act : kActs) {
        if (!with_bias && act != Activation::kNone && act != Activation::kGelu) continue;
        std::vector<double> ref, l1, int8_bound;
        Reference(x, w, b, s, act, ref, l1, int8_bound);
        double max_ref = 0.0;
        for (double v : ref) max_ref = std::max(max_ref, std::abs(v));
        for (int threads : {1, 2}) {
          for (auto* lin : {oi->get(), io->get()}) {
            std::vector<float> y(s.rows * s.out, NAN);
            lin->Forward(x.data(), s.rows, y.data(), act, threads);
            double max_err = 0.0;
            for (size_t i = 0; i < y.size(); ++i) {
              const double err = std::abs(y[i] - ref[i]);
              max_err = std::max(max_err, err);
              if (prec == Precision::kBF16) {
                ASSERT_LE(err, 1.13 * std::ldexp(1.0, -8) * l1[i] + 1e-5)
                    << "element " << i << " rows=" << s.rows << " in=" << s.in << " out=" << s.out
                    << " act=" << ActivationName(act);
              } else if (prec == Precision::kInt8) {
                ASSERT_LE(err, 1.13 * int8_bound[i] + 1e-5 + 1e-6 * std::abs(ref[i]))
                    << "element " << i << " rows=" << s.rows << " in=" << s.in << " out=" << s.out
                    << " act=" << ActivationName(act);
              }
            }
            SCOPED_TRACE(::testing::Message() << "rows=" << s.rows << " in=" << s.in
                                              << " out=" << s.out << " act=" << ActivationName(act)
                                              << " threads=" << threads << " bias=" << with_bias);
            if (prec == Precision::kF32) {
              EXPECT_LE(max_err, 2e-5 * (1.0 + max_ref));
            } else {
              // int8 on random data: the per-element bound above is the
              // guarantee; relative to max|y| it stays near 1.4 % (observed).
              EXPECT_LE(max_err, (prec == Precision::kBF16 ? 1e-2 : 4e-2) * max_ref + 1e-5);
              if (max_ref > 0) worst_rel = std::max(worst_rel, max_err / max_ref);
            }
          }
        }
      }
    }
  }
  if (prec != Precision::kF32) {
    const char* name = prec == Precision::kBF16 ? "bf16" : "int8";
    RecordProperty(std::string(name) + "_worst_max_err_over_max_y", std::to_string(worst_rel));
    std::printf("%s: worst max|err| / max|y| = %.4f\n", name, worst_rel);
  }
}

TEST_P(LinearTest, ConcurrentCallsFromTwoThreadsGiveSameResult) {
  // Two callers share one Linear, with different row counts (one above the
  // 256-row piece size) and thread budgets of 1 and 2: each must get exactly
  // what the same call gives alone.
  const Precision prec = GetParam();
  const size_t in = 384, out = 1152;
  const auto w = Weights(in, out, 7);
  const auto bias = RandomVector(out, 8);
  auto lin = Linear::Create(w.data(), WeightLayout::kOutIn, in, out, bias.data(), prec);
  ASSERT_TRUE(lin.ok());
  struct Caller {
    size_t rows;
    int threads;
    std::vector<float> x, want;
    int mismatches = 0;
  };
  Caller callers[] = {{128, 1, RandomVector(128 * in, 9), {}},
                      {301, 2, RandomVector(301 * in, 10), {}},
                      {77, 1, RandomVector(77 * in, 11), {}},
                      {77, 2, RandomVector(77 * in, 12), {}}};
  for (Caller& c : callers) {
    c.want.resize(c.rows * out);
    (*lin)->Forward(c.x.data(), c.rows, c.want.data(), Activation::kGelu, c.threads);
  }
  auto run = [&](Caller* c) {
    std::vector<float> y(c->rows * out);
    for (int it = 0; it < 10; ++it) {
      (*lin)->Forward(c->x.data(), c->rows, y.data(), Activation::kGelu, c->threads);
      if (y != c->want) ++c->mismatches;
    }
  };
  for (size_t pair = 0; pair < 2; ++pair) {
    std::thread ta(run, &callers[2 * pair]), tb(run, &callers[2 * pair + 1]);
    ta.join();
    tb.join();
  }
  for (const Caller& c : callers)
    EXPECT_EQ(c.mismatches, 0) << "rows=" << c.rows << " threads=" << c.threads;
}

TEST(LinearCreate, RejectsEmptyShape) {
  float w = 1.0f;
  EXPECT_FALSE(Linear::Create(&w, WeightLayout::kOutIn, 0, 1, nullptr, Precision::kF32).ok());
  EXPECT_FALSE(Linear::Create(nullptr, WeightLayout::kOutIn, 1, 1, nullptr, Precision::kF32).ok());
}

TEST(LinearInt8, PortableQuantizationMatchesHardwareAndPoisonsNonFiniteRows) {
  // The per-row quantization has an AVX-512 path and a portable one; a
  // Linear gives the same result on both. A row holding NaN or Inf comes
  // out NaN (not rounded to something finite); the other rows are unaffected.
  const size_t in = 100, out = 40, rows = 9;
  const auto w = Weights(in, out, 23);
  auto x = RandomVector(rows * in, 24);
  auto lin = Linear::Create(w.data(), WeightLayout::kOutIn, in, out, nullptr, Precision::kInt8);
  ASSERT_TRUE(lin.ok()) << lin.status().ToString();
  std::vector<float> a(rows * out), b(rows * out), clean(rows * out);
  (*lin)->Forward(x.data(), rows, clean.data(), Activation::kNone, 1);
  x[2 * in + 5] = NAN;
  x[6 * in + 99] = INFINITY;
  (*lin)->Forward(x.data(), rows, a.data(), Activation::kNone, 1);
  SetAvx512AllowedForTesting(false);
  (*lin)->Forward(x.data(), rows, b.data(), Activation::kNone, 1);
  SetAvx512AllowedForTesting(true);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t o = 0; o < out; ++o) {
      const size_t i = r * out + o;
      if (r == 2 || r == 6) {
        EXPECT_TRUE(std::isnan(a[i]) && std::isnan(b[i])) << "row " << r;
      } else {
        EXPECT_EQ(a[i], clean[i]) << "row " << r;
        EXPECT_EQ(b[i], clean[i]) << "row " << r;
      }
    }
  }
  std::vector<float> bad = w;
  bad[17] = NAN;
  EXPECT_FALSE(Linear::Create(bad.data(), WeightLayout::kOutIn, in, out, nullptr, Precision::kInt8).ok());
}

TEST(LinearBf16, PortableConversionMatchesHardware) {
  // The bf16 input rounding has an AVX512_BF16 path and a portable one; a
  // Linear must give the same result on both.
  const size_t in = 100, out = 40, rows = 9;
  const auto w = Weights(in, out, 21);
  const auto x = RandomVector(rows * in, 22);
  auto lin = Linear::Create(w.data(), WeightLayout::kOutIn, in, out, nullptr, Precision::kBF16);
  ASSERT_TRUE(lin.ok());
  std::vector<float> a(rows * out), b(rows * out);
  (*lin)->Forward(x.data(), rows, a.data(), Activation::kNone, 1);
  SetAvx512AllowedForTesting(false);
  (*lin)->Forward(x.data(), rows, b.data(), Activation::kNone, 1);
  SetAvx512AllowedForTesting(true);
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Precisions, LinearTest,
                         ::testing::Values(Precision::kF32, Precision::kBF16, Precision::kInt8),
                         [](const auto& info) {
                           return info.param == Precision::kF32    ? std::string("F32")
                                  : info.param == Precision::kBF16 ? std::string("BF16")
                                                                   : std::string("Int8");
                         });

}  // namespace
}  // namespace shoal::native::cpu
