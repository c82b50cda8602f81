// FewRowsGemm against a double-precision reference, and the property the
// generation engine relies on: a row's result is the same, bit for bit,
// whatever other rows share its call (a speculative step's rows equal the
// plain decode's).
#include <gtest/gtest.h>

#include <cmath>

#include "reference.h"
#include "runtime/native/kernels/cpu/few_rows_gemm.h"

namespace shoal::native::cpu {
namespace {

using testing::RandomVector;

TEST(FewRowsGemm, MatchesADoubleReference) {
  if (!FewRowsGemmAvailable()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  for (size_t in : {1, 7, 64, 133}) {
    for (size_t out : {8, 40, 96, 264, 2056}) {  // multiples of 8, of 32 and not; several tiles
      for (size_t rows = 1; rows <= kFewRows; ++rows) {
        for (bool with_bias : {false, true}) {
          const auto x = RandomVector(rows * in, 1, -1, 1);
          const auto w = RandomVector(in * out, 2, -0.2f, 0.2f);  // [in][out]
          const auto b = RandomVector(out, 3, -1, 1);
          std::vector<float> y(rows * out);
          FewRowsGemm(x.data(), rows, in, w.data(), out, with_bias ? b.data() : nullptr, y.data(), 2);
          for (size_t r = 0; r < rows; ++r) {
            for (size_t n = 0; n < out; ++n) {
              double ref = with_bias ? b[n] : 0.0;
              for (size_t k = 0; k < in; ++k) ref += static_cast<double>(x[r * in + k]) * w[k * out + n];
              ASSERT_NEAR(y[r * out + n], ref, 2e-5 * (1 + std::abs(ref)))
                  << "in " << in << " out " << out << " rows " << rows << " at " << r << "," << n;
            }
          }
        }
      }
    }
  }
}

TEST(FewRowsGemm, ARowsResultDoesNotDependOnTheOtherRowsOrThreads) {
  if (!FewRowsGemmAvailable()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
  const size_t in = 512, out = 1000 / 8 * 8;
  const auto x = RandomVector(kFewRows * in, 4, -1, 1);
  const auto w = RandomVector(in * out, 5, -0.1f, 0.1f);
  std::vector<float> batch(kFewRows * out), alone(out);
  for (size_t rows = 1; rows <= kFewRows; ++rows) {
    FewRowsGemm(x.data(), rows, in, w.data(), out, nullptr, batch.data(), rows % 2 ? 1 : 2);
    for (size_t r = 0; r < rows; ++r) {
      FewRowsGemm(x.data() + r * in, 1, in, w.data(), out, nullptr, alone.data(), 1);
      for (size_t n = 0; n < out; ++n) ASSERT_EQ(batch[r * out + n], alone[n]) << rows << " rows, row " << r;
    }
  }
}

}  // namespace
}  // namespace shoal::native::cpu
