#include "runtime/native/kernels/cpu/few_rows_gemm.h"

#include <immintrin.h>

#include <algorithm>

namespace shoal::native::cpu {
namespace {

#define SHOAL_AVX2 __attribute__((target("avx2,fma")))

// Rows of W walked together: that many sequential streams at once.
constexpr size_t kPanelRows = 8;
// Columns finished before the next: a multiple of 32 (every block width).
constexpr size_t kTileColumns = 1024;

// Columns [n0, n1) of R rows over W's rows [k0, k1), C registers (8
// columns each) per row: R·C accumulators in registers. They start from
// the bias (first panel) or from what the previous panel left in y.
template <int R, int C>
SHOAL_AVX2 void Block(const float* x, size_t in, const float* w, size_t out, const float* bias, float* y, size_t n0,
                      size_t n1, size_t k0, size_t k1) {
  for (size_t n = n0; n < n1; n += 8 * C) {
    __m256 acc[R][C];
#pragma GCC unroll 8  // the accumulators must stay in registers
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) {
        const size_t at = n + 8 * c;
        acc[r][c] = k0 > 0 ? _mm256_loadu_ps(y + r * out + at) : bias ? _mm256_loadu_ps(bias + at) : _mm256_setzero_ps();
      }
    }
    for (size_t k = k0; k < k1; ++k) {
      const float* wk = w + k * out + n;
      __m256 wv[C];
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) wv[c] = _mm256_loadu_ps(wk + 8 * c);
  #pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        const __m256 xv = _mm256_broadcast_ss(x + r * in + k);
  #pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) _mm256_storeu_ps(y + r * out + n + 8 * c, acc[r][c]);
    }
  }
}

// Columns [n0, n1) (a multiple of 8 wide) of R rows: tile by tile, so the
// partial sums a tile keeps in y between panels stay in the L1/L2 cache
// even for a vocabulary-wide head; within a tile, panel by panel.
template <int R>
SHOAL_AVX2 void Columns(const float* x, size_t in, const float* w, size_t out, const float* bias, float* y, size_t n0,
                        size_t n1) {
  constexpr int C = R <= 2 ? 4 : R <= 4 ? 2 : 1;
  for (size_t t0 = n0; t0 < n1; t0 += kTileColumns) {
    const size_t t1 = std::min(n1, t0 + kTileColumns);
    const size_t wide_end = t0 + (t1 - t0) / (8 * C) * (8 * C);
    for (size_t k0 = 0; k0 < in; k0 += kPanelRows) {
      const size_t k1 = std::min(in, k0 + kPanelRows);
      Block<R, C>(x, in, w, out, bias, y, t0, wide_end, k0, k1);
      if (wide_end < t1) Block<R, 1>(x, in, w, out, bias, y, wide_end, t1, k0, k1);
    }
  }
}

using ColumnsFn = void (*)(const float*, size_t, const float*, size_t, const float*, float*, size_t, size_t);
constexpr ColumnsFn kColumns[kFewRows] = {Columns<1>, Columns<2>, Columns<3>, Columns<4>,
                                          Columns<5>, Columns<6>, Columns<7>, Columns<8>};

}  // namespace

bool FewRowsGemmAvailable() {
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return available;
}

void FewRowsGemm(const float* x, size_t rows, size_t in, const float* w, size_t out, const float* bias, float* y,
                 int threads) {
  const ColumnsFn columns = kColumns[rows - 1];
  // Each thread a contiguous share of the columns, in units of 32.
  const size_t units = (out + 31) / 32;
  threads = static_cast<int>(std::clamp<size_t>(static_cast<size_t>(threads), 1, units));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int t = 0; t < threads; ++t) {
    const size_t n0 = std::min(out, units * t / threads * 32);
    const size_t n1 = std::min(out, units * (t + 1) / threads * 32);
    if (n0 < n1) columns(x, in, w, out, bias, y, n0, n1);
  }
}

}  // namespace shoal::native::cpu
