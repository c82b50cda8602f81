// Internal to shoal_kernels: exp / erf / tanh and the activations, as AVX-512
// inline functions (16 floats) and scalar twins for the portable path.
//
// Accuracy (fp32): exp ~2 ulp (Cephes polynomial), erf ≤ 3e-7 absolute
// (Abramowitz–Stegun 7.1.26), tanh ≤ 2e-7 absolute. The scalar twins use libm.
// Threading: pure functions.
#pragma once

#include <immintrin.h>

#include <cmath>

#include "runtime/native/kernels/cpu/isa.h"
#include "runtime/native/kernels/cpu/kernels.h"

namespace shoal::native::cpu {

// --- AVX-512 ---------------------------------------------------------------

SHOAL_AVX512 inline __m512 Exp512(__m512 x) {
  // exp(x) = 2^n · exp(r), r = x − n·ln2 ∈ [−ln2/2, ln2/2].
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f)),
                    _mm512_set1_ps(-87.3365478515625f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

SHOAL_AVX512 inline __m512 Erf512(__m512 x) {
  const __m512 sign = _mm512_and_ps(x, _mm512_set1_ps(-0.0f));
  const __m512 a = _mm512_abs_ps(x);
  const __m512 t = _mm512_div_ps(
      _mm512_set1_ps(1.0f), _mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  p = _mm512_mul_ps(p, t);
  const __m512 e = Exp512(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a));
  const __m512 y = _mm512_fnmadd_ps(p, e, _mm512_set1_ps(1.0f));
  return _mm512_or_ps(y, sign);
}

SHOAL_AVX512 inline __m512 Tanh512(__m512 x) {
  // tanh(x) = (e^{2x} − 1) / (e^{2x} + 1); |x| ≥ 9 rounds to ±1 in fp32.
  const __m512 c = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(9.0f)), _mm512_set1_ps(-9.0f));
  const __m512 e = Exp512(_mm512_add_ps(c, c));
  return _mm512_div_ps(_mm512_sub_ps(e, _mm512_set1_ps(1.0f)),
                       _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
}

SHOAL_AVX512 inline __m512 Activate512(__m512 x, Activation act) {
  switch (act) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return _mm512_max_ps(x, _mm512_setzero_ps());
    case Activation::kTanh:
      return Tanh512(x);
    case Activation::kGelu: {
      const __m512 e = Erf512(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)));
      return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)),
                           _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
    }
    case Activation::kGeluTanh: {
      const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
      const __m512 in = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f),
                                      _mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x));
      return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)),
                           _mm512_add_ps(Tanh512(in), _mm512_set1_ps(1.0f)));
    }
  }
  return x;
}

// --- Scalar ----------------------------------------------------------------

inline float ActivateScalar(float x, Activation act) {
  switch (act) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kGelu:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case Activation::kGeluTanh:
      return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

// y[r][c] = act(y[r][c] + bias[c]) over a [rows, cols] block; bias may be null.
// Single-threaded: callers split rows.
void BiasActivateRows(float* y, size_t rows, size_t cols, const float* bias, Activation act);

// x[c] = act(x[c] · scale + bias[c]) over one row; bias may be null.
void ScaleBiasActivate(float* x, size_t n, float scale, const float* bias, Activation act);

// fp32 → bf16, round to nearest even (NaN stays NaN). Single-threaded.
void F32ToBf16(const float* in, uint16_t* out, size_t n);

}  // namespace shoal::native::cpu
