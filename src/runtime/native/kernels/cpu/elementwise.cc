// Elementwise kernels: activations, bias + activation epilogue, the GeGLU gate, mean pooling,
// L2 normalization, and the bf16 / f16 / f32 conversions.
//
// Threading: none of these start threads (they are either called per row
// block from a caller's parallel region, or are too cheap to be worth one).
// Each has an AVX-512 path chosen at run time and a portable loop.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "runtime/native/kernels/cpu/isa.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/kernels/cpu/vec_math.h"

namespace shoal::native::cpu {
namespace {

// x = act(x · scale + bias), scale 1 by default.
SHOAL_AVX512 void ActivateAvx512(float* x, size_t n, const float* bias, Activation act, float scale = 1.0f) {
  const __m512 s = _mm512_set1_ps(scale);
  const bool scaled = scale != 1.0f;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    if (scaled) v = _mm512_mul_ps(v, s);
    if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + i));
    _mm512_storeu_ps(x + i, Activate512(v, act));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    if (scaled) v = _mm512_mul_ps(v, s);
    if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + i));
    _mm512_mask_storeu_ps(x + i, m, Activate512(v, act));
  }
}

void ActivatePortable(float* x, size_t n, const float* bias, Activation act, float scale = 1.0f) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i] * scale;
    x[i] = ActivateScalar(bias ? v + bias[i] : v, act);
  }
}

SHOAL_AVX512 void F16ToF32Avx512(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(h));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m256i h = _mm256_maskz_loadu_epi16(m, in + i);
    _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(h));
  }
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // ±0
  } else {
    // Subnormal half: normalize into a normal float.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);                 // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void F32ToBf16Avx512Bf16(
    const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + i + 16), _mm512_loadu_ps(in + i));
    _mm512_storeu_si512(out + i, reinterpret_cast<const __m512i&>(v));
  }
  for (; i + 16 <= n; i += 16) {
    const __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), reinterpret_cast<const __m256i&>(v));
  }
  for (; i < n; ++i) out[i] = FloatToBf16(in[i]);
}

}  // namespace

void BiasActivateRows(float* y, size_t rows, size_t cols, const float* bias, Activation act) {
  if (!bias && act == Activation::kNone) return;
  const bool avx = UseAvx512();
  for (size_t r = 0; r < rows; ++r) {
    float* row = y + r * cols;
    if (avx) {
      ActivateAvx512(row, cols, bias, act);
    } else {
      ActivatePortable(row, cols, bias, act);
    }
  }
}

void ScaleBiasActivate(float* x, size_t n, float scale, const float* bias, Activation act) {
  if (UseAvx512()) {
    ActivateAvx512(x, n, bias, act, scale);
  } else {
    ActivatePortable(x, n, bias, act, scale);
  }
}

void Activate(float* x, size_t n, Activation act) {
  if (act == Activation::kNone) return;
  if (UseAvx512()) {
    ActivateAvx512(x, n, nullptr, act);
  } else {
    ActivatePortable(x, n, nullptr, act);
  }
}

void Activate(float* x, size_t n, Activation act, int threads) {
  // Pieces of 64 Ki values: worth a thread each, aligned to the 16-wide path.
  constexpr size_t kPiece = size_t{1} << 16;
  const size_t pieces = (n + kPiece - 1) / kPiece;
  const int teams = static_cast<int>(std::min<size_t>(std::max(threads, 1), std::max<size_t>(pieces, 1)));
#pragma omp parallel for num_threads(teams) schedule(static) if (teams > 1)
  for (size_t p = 0; p < pieces; ++p) Activate(x + p * kPiece, std::min(kPiece, n - p * kPiece), act);
}

void GeluMul(const float* x, size_t rows, size_t inter, float* out, int threads) {
  const int nt = rows * inter < 65536 ? 1 : std::max(1, std::min<int>(threads, static_cast<int>(rows)));
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (size_t r = 0; r < rows; ++r) {
    const float* in = x + r * 2 * inter;
    const float* gate = in + inter;
    float* o = out + r * inter;
    std::memcpy(o, in, inter * sizeof(float));
    Activate(o, inter, Activation::kGelu);
    for (size_t i = 0; i < inter; ++i) o[i] *= gate[i];
  }
}

void MeanPool(const float* x, size_t cols, std::span<const uint32_t> offsets, float* out) {
  if (offsets.size() < 2) return;
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    float* o = out + s * cols;
    std::memset(o, 0, cols * sizeof(float));
    const size_t begin = offsets[s], end = offsets[s + 1];
    // Row-by-row sums: the inner loop is contiguous and auto-vectorizes.
    for (size_t r = begin; r < end; ++r) {
      const float* row = x + r * cols;
      for (size_t c = 0; c < cols; ++c) o[c] += row[c];
    }
    if (end > begin) {
      const float inv = 1.0f / static_cast<float>(end - begin);
      for (size_t c = 0; c < cols; ++c) o[c] *= inv;
    }
  }
}

void L2Normalize(float* v, size_t n, float eps) {
  // Double accumulation: n is an embedding width (≤ a few thousand), so this
  // costs nothing and keeps the norm exact to fp32 rounding.
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * v[i];
  const double norm = std::sqrt(sum);
  const float inv = static_cast<float>(1.0 / std::max(norm, static_cast<double>(eps)));
  for (size_t i = 0; i < n; ++i) v[i] *= inv;
}

void Bf16ToF32(const uint16_t* in, float* out, size_t n) {
  // A shift into the high half; the compiler vectorizes this loop.
  for (size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(static_cast<uint32_t>(in[i]) << 16);
}

void F16ToF32(const uint16_t* in, float* out, size_t n) {
  if (UseAvx512()) {
    F16ToF32Avx512(in, out, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = HalfToFloat(in[i]);
}

void F32ToBf16(const float* in, uint16_t* out, size_t n) {
  if (HasAvx512Bf16()) {
    F32ToBf16Avx512Bf16(in, out, n);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBf16(in[i]);
}

}  // namespace shoal::native::cpu
