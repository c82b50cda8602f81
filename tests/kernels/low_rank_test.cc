// LowRankUpdate (LoRA's y += (x·Aᵀ)·Btᵀ) against a double-precision reference,
// on both ISAs, with lengths off the 16-lane vectors, strided outputs and
// two threads.
#include <gtest/gtest.h>

#include "reference.h"

namespace shoal::native::cpu {
namespace {

using testing::ForEachIsa;
using testing::RandomVector;

TEST(LowRankUpdate, AddsTheUpdateToEveryRow) {
  ForEachIsa([](const char* isa) {
    struct Shape {
      size_t rows, in, out, rank;
    };
    for (const Shape s : {Shape{1, 768, 768, 16}, Shape{37, 37, 19, 5}, Shape{130, 64, 256, 8}, Shape{3, 16, 3, 1},
                          Shape{9, 100, 70, 40}, Shape{5, 33, 17, 64}, Shape{6, 20, 20, 100}}) {
      const size_t ldy = s.out + 7;  // a column block of a wider output
      const auto x = RandomVector(s.rows * s.in, 1, -1.0f, 1.0f);
      const auto at = RandomVector(s.in * s.rank, 2, -0.1f, 0.1f);  // Aᵀ [in][rank]
      const auto bt = RandomVector(s.rank * s.out, 3, -0.1f, 0.1f);
      auto y = RandomVector(s.rows * ldy, 4, -1.0f, 1.0f);
      std::vector<double> want(y.begin(), y.end());
      for (size_t r = 0; r < s.rows; ++r) {
        for (size_t k = 0; k < s.rank; ++k) {
          double low = 0;
          for (size_t i = 0; i < s.in; ++i) low += static_cast<double>(at[i * s.rank + k]) * x[r * s.in + i];
          for (size_t o = 0; o < s.out; ++o) want[r * ldy + o] += low * bt[k * s.out + o];
        }
      }
      // Two blocks: the first rows, and the rest (one parallel loop over both).
      const size_t split = s.rows / 3;
      const std::vector<LowRankBlock> blocks = {
          {x.data(), y.data(), split, s.in, s.out, ldy, at.data(), bt.data(), s.rank},
          {x.data() + split * s.in, y.data() + split * ldy, s.rows - split, s.in, s.out, ldy, at.data(), bt.data(),
           s.rank}};
      ASSERT_TRUE(LowRankUpdate(blocks, 2).ok());
      EXPECT_LE(testing::MaxAbsDiff(y, want), 2e-5f) << isa << " rows " << s.rows << " in " << s.in;
    }
  });
}

TEST(LowRankUpdate, RefusesARankOver256) {
  std::vector<float> x(4), y(4), a(4), bt(4);
  const std::vector<LowRankBlock> blocks = {{x.data(), y.data(), 1, 4, 1, 4, a.data(), bt.data(), 257}};
  EXPECT_EQ(LowRankUpdate(blocks, 1).code(), Code::kInvalidInput);
}

}  // namespace
}  // namespace shoal::native::cpu
