// LayerNorm (with and without the fused residual) against a double reference,
// on the AVX-512 and portable paths.
#include <gtest/gtest.h>

#include <thread>

#include "reference.h"

namespace shoal::native::cpu {
namespace {

using testing::ForEachIsa;
using testing::RandomVector;

std::vector<double> Reference(const std::vector<float>& x, const float* res, size_t rows,
                              size_t cols, const std::vector<float>& g, const std::vector<float>& b,
                              double eps) {
  std::vector<double> y(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    std::vector<double> v(cols);
    for (size_t c = 0; c < cols; ++c) {
      v[c] = static_cast<double>(x[r * cols + c]) + (res ? res[r * cols + c] : 0.0);
      mean += v[c];
    }
    mean /= cols;
    for (size_t c = 0; c < cols; ++c) var += (v[c] - mean) * (v[c] - mean);
    var /= cols;
    for (size_t c = 0; c < cols; ++c)
      y[r * cols + c] = (v[c] - mean) / std::sqrt(var + eps) * g[c] + b[c];
  }
  return y;
}

TEST(LayerNorm, MatchesReference) {
  ForEachIsa([](const char* isa) {
    uint32_t seed = 100;
    const std::pair<size_t, size_t> shapes[] = {{1, 1},   {1, 7},    {3, 16},    {5, 17},
                                                {2, 384}, {33, 768}, {300, 768}, {7, 1001}};
    for (auto [rows, cols] : shapes) {
      // An offset mean and a spread: catches E[x²]−E[x]² cancellation.
      const auto x = RandomVector(rows * cols, seed++, 2.0f, 6.0f);
      const auto res = RandomVector(rows * cols, seed++);
      const auto g = RandomVector(cols, seed++, 0.5f, 1.5f);
      const auto b = RandomVector(cols, seed++);
      for (const bool with_res : {false, true}) {
        for (int threads : {1, 2}) {
          auto y = x;
          LayerNorm(y.data(), with_res ? res.data() : nullptr, rows, cols, g.data(), b.data(),
                    1e-12f, threads);
          const auto ref = Reference(x, with_res ? res.data() : nullptr, rows, cols, g, b, 1e-12);
          EXPECT_LE(testing::MaxAbsDiff(y, ref), cols == 1 ? 1e-6f : 5e-5f)
              << isa << " rows=" << rows << " cols=" << cols << " res=" << with_res;
        }
      }
    }
  });
}

// The pre-norm step: the stream gets the delta, out gets LN of it; and a
// LayerNorm without bias (beta null), as ModernBERT's.
TEST(LayerNorm, ResidualStepAndNoBias) {
  ForEachIsa([](const char* isa) {
    uint32_t seed = 500;
    for (auto [rows, cols] : {std::pair<size_t, size_t>{3, 17}, {40, 768}, {300, 64}}) {
      const auto x = RandomVector(rows * cols, seed++, 2.0f, 6.0f);
      const auto delta = RandomVector(rows * cols, seed++);
      const auto g = RandomVector(cols, seed++, 0.5f, 1.5f);
      const std::vector<float> zero(cols, 0.0f);
      for (int threads : {1, 2}) {
        auto stream = x;
        std::vector<float> out(rows * cols, NAN);
        ResidualLayerNorm(stream.data(), delta.data(), out.data(), rows, cols, g.data(), nullptr, 1e-5f, threads);
        std::vector<double> sum(rows * cols);
        for (size_t i = 0; i < sum.size(); ++i) sum[i] = static_cast<double>(x[i]) + delta[i];
        EXPECT_LE(testing::MaxAbsDiff(stream, sum), 1e-6f) << isa;
        EXPECT_LE(testing::MaxAbsDiff(out, Reference(x, delta.data(), rows, cols, g, zero, 1e-5)), 5e-5f)
            << isa << " rows=" << rows << " cols=" << cols;
      }
    }
  });
}

TEST(LayerNorm, LargeEpsilonAndConstantRow) {
  ForEachIsa([](const char* isa) {
    const size_t cols = 40;
    std::vector<float> x(cols, 3.0f), g(cols, 2.0f), b(cols, 0.25f);
    LayerNorm(x.data(), nullptr, 1, cols, g.data(), b.data(), 1e-5f, 1);
    for (float v : x) EXPECT_NEAR(v, 0.25f, 1e-6f) << isa;
  });
}

TEST(LayerNorm, ConcurrentCallsFromTwoThreads) {
  const size_t rows = 257, cols = 768;
  const auto x = RandomVector(rows * cols, 5), res = RandomVector(rows * cols, 6);
  const auto g = RandomVector(cols, 7), b = RandomVector(cols, 8);
  auto want = x;
  LayerNorm(want.data(), res.data(), rows, cols, g.data(), b.data(), 1e-12f, 1);
  int bad[2] = {0, 0};
  auto run = [&](int* mismatches) {
    for (int it = 0; it < 20; ++it) {
      auto y = x;
      LayerNorm(y.data(), res.data(), rows, cols, g.data(), b.data(), 1e-12f, 1);
      if (y != want) ++*mismatches;
    }
  };
  std::thread t0(run, &bad[0]), t1(run, &bad[1]);
  t0.join();
  t1.join();
  EXPECT_EQ(bad[0] + bad[1], 0);
}

}  // namespace
}  // namespace shoal::native::cpu
