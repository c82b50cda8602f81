// Decoder kernels (decoder_kernels.h).
//
// PagedAttention's work unit is (query row, kv head): the query heads that
// share a kv head are done together, so each key and value row read from the
// cache feeds all of them (grouped-query attention makes decode memory-bound
// on the cache; reading it once per group instead of once per head is the
// point). Scores for one row live in a thread_local buffer; softmax is exact
// (max-subtracted) over the row's positions. Units are spread with a dynamic
// schedule: rows of one prefill chunk see different numbers of positions.
#include "runtime/native/kernels/cpu/decoder_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/native/kernels/cpu/isa.h"

namespace shoal::native::cpu {
namespace {

SHOAL_AVX512 float DotAvx512(const float* a, const float* b, size_t n) {
  __m512 acc = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

SHOAL_AVX512 void AxpyAvx512(float* y, float a, const float* x, size_t n) {
  const __m512 va = _mm512_set1_ps(a);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

float DotPortable(const float* a, const float* b, size_t n) {
  float s = 0;
  for (size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void AxpyPortable(float* y, float a, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

float Dot(const float* a, const float* b, size_t n) {
  return UseAvx512() ? DotAvx512(a, b, n) : DotPortable(a, b, n);
}
void Axpy(float* y, float a, const float* x, size_t n) {
  UseAvx512() ? AxpyAvx512(y, a, x, n) : AxpyPortable(y, a, x, n);
}

thread_local std::vector<float> t_scores;

// Sixteen running maxima, then the first index holding the overall one.
SHOAL_AVX512 size_t ArgMaxAvx512(const float* x, size_t n) {
  __m512 best = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + 16 <= n; i += 16) best = _mm512_max_ps(best, _mm512_loadu_ps(x + i));
  float m = _mm512_reduce_max_ps(best);
  for (size_t j = i; j < n; ++j) m = std::max(m, x[j]);
  const __m512 vm = _mm512_set1_ps(m);
  for (i = 0; i + 16 <= n; i += 16) {
    if (const __mmask16 eq = _mm512_cmpeq_ps_mask(_mm512_loadu_ps(x + i), vm)) return i + __builtin_ctz(eq);
  }
  for (; i < n; ++i) {
    if (x[i] == m) return i;
  }
  return 0;  // all NaN
}

}  // namespace

size_t ArgMax(const float* x, size_t n) {
  if (n == 0) return 0;
  if (UseAvx512()) return ArgMaxAvx512(x, n);
  return static_cast<size_t>(std::max_element(x, x + n) - x);
}

void RmsNorm(const float* x, size_t ld_x, float* out, size_t ld_out, size_t rows, size_t cols,
             const float* weight, float eps, int threads) {
  OmpThreads scope(threads);
#pragma omp parallel for schedule(static) if (rows > 16)
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ld_x;
    float* o = out + r * ld_out;
    const float ms = Dot(xr, xr, cols) / static_cast<float>(cols);
    const float inv = 1.0f / std::sqrt(ms + eps);
    for (size_t i = 0; i < cols; ++i) o[i] = xr[i] * inv * weight[i];
  }
}

void Rope(float* x, size_t ld, size_t rows, int heads, int head_dim, const uint32_t* positions,
          const float* cos_sin, int threads) {
  const int half = head_dim / 2;
  OmpThreads scope(threads);
#pragma omp parallel for schedule(static) if (rows > 16)
  for (size_t r = 0; r < rows; ++r) {
    const float* c = cos_sin + static_cast<size_t>(positions[r]) * head_dim;
    const float* s = c + half;
    for (int h = 0; h < heads; ++h) {
      float* v = x + r * ld + static_cast<size_t>(h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

void SiluMul(const float* gate_up, size_t rows, size_t inter, float* out, int threads) {
  OmpThreads scope(threads);
#pragma omp parallel for schedule(static) if (rows > 4)
  for (size_t r = 0; r < rows; ++r) {
    const float* g = gate_up + r * 2 * inter;
    const float* u = g + inter;
    float* o = out + r * inter;
    for (size_t i = 0; i < inter; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
}

void PagedAttention(const float* q, size_t ld_q, float* out, size_t ld_out,
                    std::span<const AttentionSeq> seqs, const KvLayer& kv, int heads, float scale,
                    bool causal, int threads) {
  const int group = heads / kv.kv_heads;
  const size_t dim = static_cast<size_t>(kv.head_dim);
  const size_t slot_stride = static_cast<size_t>(kv.kv_heads) * dim;
  const size_t block_stride = kv.block_tokens * slot_stride;
  // Flatten (sequence, row, kv head) into units.
  struct Unit {
    const AttentionSeq* seq;
    uint32_t i;  // row within the sequence's chunk
    int kvh;
  };
  std::vector<Unit> units;
  for (const AttentionSeq& s : seqs) {
    for (uint32_t i = 0; i < s.count; ++i) {
      for (int h = 0; h < kv.kv_heads; ++h) units.push_back({&s, i, h});
    }
  }
  OmpThreads scope(threads);
#pragma omp parallel for schedule(dynamic, 1) if (units.size() > 1)
  for (size_t u = 0; u < units.size(); ++u) {
    const Unit& unit = units[u];
    const AttentionSeq& s = *unit.seq;
    const size_t row = s.row + unit.i;
    const size_t len = causal ? s.start + unit.i + 1 : s.start + s.count;  // positions this row sees
    std::vector<float>& scores = t_scores;
    scores.resize(len * group);
    // Scores: scores[g * len + j] for query head kvh*group + g.
    for (size_t j = 0; j < len; ++j) {
      const float* k = kv.k + static_cast<size_t>(s.blocks[j / kv.block_tokens]) * block_stride +
                       (j % kv.block_tokens) * slot_stride + unit.kvh * dim;
      for (int g = 0; g < group; ++g) {
        const float* qh = q + row * ld_q + static_cast<size_t>(unit.kvh * group + g) * dim;
        scores[g * len + j] = Dot(qh, k, dim) * scale;
      }
    }
    for (int g = 0; g < group; ++g) {
      float* sc = scores.data() + g * len;
      const float mx = *std::max_element(sc, sc + len);
      float sum = 0;
      for (size_t j = 0; j < len; ++j) {
        sc[j] = std::exp(sc[j] - mx);
        sum += sc[j];
      }
      const float inv = 1.0f / sum;
      for (size_t j = 0; j < len; ++j) sc[j] *= inv;
      std::fill_n(out + row * ld_out + static_cast<size_t>(unit.kvh * group + g) * dim, dim, 0.0f);
    }
    for (size_t j = 0; j < len; ++j) {
      const float* v = kv.v + static_cast<size_t>(s.blocks[j / kv.block_tokens]) * block_stride +
                       (j % kv.block_tokens) * slot_stride + unit.kvh * dim;
      for (int g = 0; g < group; ++g) {
        Axpy(out + row * ld_out + static_cast<size_t>(unit.kvh * group + g) * dim, scores[g * len + j], v, dim);
      }
    }
  }
}

}  // namespace shoal::native::cpu
