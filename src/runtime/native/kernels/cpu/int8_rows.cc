#include "runtime/native/kernels/cpu/int8_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/native/kernels/cpu/isa.h"
#include "runtime/native/kernels/cpu/vec_math.h"

namespace shoal::native::cpu {
namespace {

// A parallel region costs a fork/join: only worth it past this many values.
constexpr size_t kParallelValues = 32768;

SHOAL_AVX512 float MaxAbsAvx512(const float* x, size_t n) {
  __m512 m = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
    m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_maskz_loadu_ps(k, x + i)));
  }
  return _mm512_reduce_max_ps(m);
}

// Rounds to nearest even (the MXCSR default) and saturates to int8.
SHOAL_AVX512 void QuantizeAvx512(const float* x, size_t n, float inv, int8_t* q) {
  const __m512 s = _mm512_set1_ps(inv);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), s));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtsepi32_epi8(v));
  }
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), s));
    _mm_mask_storeu_epi8(q + i, k, _mm512_cvtsepi32_epi8(v));
  }
}

float MaxAbsPortable(const float* x, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(x[i]));
  return m;
}

void QuantizePortable(const float* x, size_t n, float inv, int8_t* q) {
  for (size_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(x[i] * inv);
    q[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
  }
}

void QuantizeRow(const float* x, size_t n, int8_t* q, float* scale, bool avx) {
  float max_abs = avx ? MaxAbsAvx512(x, n) : MaxAbsPortable(x, n);
  // max and abs drop NaN: a row holding one must still poison its outputs.
  if (!std::isfinite(max_abs) || std::any_of(x, x + n, [](float v) { return std::isnan(v); })) {
    std::fill(q, q + n, int8_t{0});
    *scale = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  if (max_abs == 0.0f) {
    std::fill(q, q + n, int8_t{0});
    *scale = 0.0f;
    return;
  }
  *scale = max_abs / 127.0f;
  const float inv = 127.0f / max_abs;
  if (avx) {
    QuantizeAvx512(x, n, inv, q);
  } else {
    QuantizePortable(x, n, inv, q);
  }
}

}  // namespace

void QuantizeRowsS8(const float* x, size_t rows, size_t cols, int8_t* q, float* scale,
                    int threads) {
  const bool avx = UseAvx512();
#pragma omp parallel for num_threads(threads) \
    schedule(static) if (threads > 1 && rows * cols >= kParallelValues)
  for (size_t r = 0; r < rows; ++r) QuantizeRow(x + r * cols, cols, q + r * cols, scale + r, avx);
}

void DequantizeRows(float* y, size_t rows, size_t cols, const float* scale, const float* bias,
                    Activation act, int threads) {
#pragma omp parallel for num_threads(threads) \
    schedule(static) if (threads > 1 && rows * cols >= kParallelValues)
  for (size_t r = 0; r < rows; ++r) ScaleBiasActivate(y + r * cols, cols, scale[r], bias, act);
}

}  // namespace shoal::native::cpu
