// LayerNorm with an optional fused residual add: x = LN(x + residual) (a
// post-norm block, BERT), or x += delta, out = LN(x) (a pre-norm block,
// ModernBERT). A null beta is a LayerNorm without bias.
//
// Threading: rows are split over up to `threads` OpenMP threads (static
// schedule: every row costs the same); a row is processed by one thread in
// two passes over data that stays in L1 (width ≤ a few thousand floats).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/native/kernels/cpu/isa.h"
#include "runtime/native/kernels/cpu/kernels.h"

namespace shoal::native::cpu {
namespace {

SHOAL_AVX512 void RowAvx512(float* x, const float* res, size_t n, const float* gamma,
                            const float* beta, float eps) {
  // Pass 1: x += res, sum. Pass 2: centered sum of squares (exact two-pass
  // variance, no E[x²]−E[x]² cancellation). Pass 3: normalize.
  __m512 acc = _mm512_setzero_ps();
  size_t i = 0;
  const size_t full = n & ~size_t{15};
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - full)) - 1);
  for (; i < full; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    if (res) {
      v = _mm512_add_ps(v, _mm512_loadu_ps(res + i));
      _mm512_storeu_ps(x + i, v);
    }
    acc = _mm512_add_ps(acc, v);
  }
  if (tail) {
    __m512 v = _mm512_maskz_loadu_ps(tail, x + i);
    if (res) {
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(tail, res + i));
      _mm512_mask_storeu_ps(x + i, tail, v);
    }
    acc = _mm512_add_ps(acc, v);
  }
  const float mean = _mm512_reduce_add_ps(acc) / static_cast<float>(n);
  const __m512 vmean = _mm512_set1_ps(mean);
  acc = _mm512_setzero_ps();
  for (i = 0; i < full; i += 16) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), vmean);
    acc = _mm512_fmadd_ps(d, d, acc);
  }
  if (tail) {
    const __m512 d = _mm512_maskz_sub_ps(tail, _mm512_maskz_loadu_ps(tail, x + i), vmean);
    acc = _mm512_fmadd_ps(d, d, acc);
  }
  const float var = _mm512_reduce_add_ps(acc) / static_cast<float>(n);
  const __m512 rstd = _mm512_set1_ps(1.0f / std::sqrt(var + eps));
  for (i = 0; i < full; i += 16) {
    const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vmean), rstd);
    const __m512 b = beta ? _mm512_loadu_ps(beta + i) : _mm512_setzero_ps();
    _mm512_storeu_ps(x + i, _mm512_fmadd_ps(d, _mm512_loadu_ps(gamma + i), b));
  }
  if (tail) {
    const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + i), vmean), rstd);
    const __m512 b = beta ? _mm512_maskz_loadu_ps(tail, beta + i) : _mm512_setzero_ps();
    _mm512_mask_storeu_ps(x + i, tail, _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(tail, gamma + i), b));
  }
}

void RowPortable(float* x, const float* res, size_t n, const float* gamma, const float* beta,
                 float eps) {
  // Double accumulators: the portable path favours exactness over speed.
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (res) x[i] += res[i];
    sum += x[i];
  }
  const double mean = sum / static_cast<double>(n);
  double sq = 0.0;
  for (size_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((x[i] - mean) * rstd) * gamma[i] + (beta ? beta[i] : 0.0f);
  }
}

// Below ~64k elements a parallel region costs more than it saves.
int TeamFor(size_t rows, size_t cols, int threads) {
  return rows * cols < 65536 ? 1 : std::max(1, std::min<int>(threads, static_cast<int>(rows)));
}

}  // namespace

void LayerNorm(float* x, const float* residual, size_t rows, size_t cols, const float* gamma,
               const float* beta, float eps, int threads) {
  if (rows == 0 || cols == 0) return;
  const bool avx = UseAvx512();
  const int nt = TeamFor(rows, cols, threads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (size_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    const float* res = residual ? residual + r * cols : nullptr;
    if (avx) {
      RowAvx512(row, res, cols, gamma, beta, eps);
    } else {
      RowPortable(row, res, cols, gamma, beta, eps);
    }
  }
}

void ResidualLayerNorm(float* x, const float* delta, float* out, size_t rows, size_t cols, const float* gamma,
                       const float* beta, float eps, int threads) {
  if (rows == 0 || cols == 0) return;
  const bool avx = UseAvx512();
  const int nt = TeamFor(rows, cols, threads);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (size_t r = 0; r < rows; ++r) {
    float* stream = x + r * cols;
    float* row = out + r * cols;
    if (delta) {
      const float* d = delta + r * cols;
      for (size_t c = 0; c < cols; ++c) stream[c] += d[c];
    }
    std::memcpy(row, stream, cols * sizeof(float));
    if (avx) {
      RowAvx512(row, nullptr, cols, gamma, beta, eps);
    } else {
      RowPortable(row, nullptr, cols, gamma, beta, eps);
    }
  }
}

}  // namespace shoal::native::cpu
