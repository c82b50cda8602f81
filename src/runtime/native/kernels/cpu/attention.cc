// Multi-head self-attention over packed variable-length sequences.
//
// Work unit: one (sequence, head) pair, in one of two ways by length:
// - short (< kGemmMinLen): keys are copied transposed into a per-thread
//   kt[head_dim][len] so a query row's scores are head_dim contiguous axpy's
//   over len (vectorized over keys, no horizontal reductions); scale and
//   softmax are fused on the score rows; the probabilities then accumulate v
//   rows into the output (vectorized over head_dim). Four query rows at a
//   time, so each loaded key/value vector feeds four FMAs.
// - long: S = scale·Q·Kᵀ and O = P·V as two sgemm calls straight on the
//   strided q/k/v (no copies), softmax fused in one pass over S, and the 1/sum
//   applied to O's rows (L·D multiplies instead of L·L).
// Without AVX-512, short sequences run the same algorithm in plain loops and
// long ones the same sgemm calls with a scalar softmax.
// Local (sliding-window) attention, when the window is narrower than the
// sequence, runs the sgemm path with the scores outside the window zeroed
// after the max is taken over the window alone; causal attention the same,
// the window being the row's past.
// ALiBi (jina-embeddings-v2) runs the sgemm path with −slope·|i − j| added to
// the scores.
// DisentangledAttention (DeBERTa) runs the sgemm path with its two relative-
// position terms gathered into the scores before the softmax.
// A key limit (ColBERT's query expansion) makes only a sequence's first
// `keys` rows keys and values; every row is still a query.
//
// Threading: (sequence, head) pairs are spread over up to `threads` OpenMP
// threads with a dynamic schedule (sequence lengths differ). oneDNN's sgemm
// runs single-threaded inside our parallel region, and under OmpThreads(nt)
// when there is none, so a call never uses more than `threads`. Buffers are
// thread_local, so concurrent calls from different executors share nothing.
#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/native/kernels/cpu/isa.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/kernels/cpu/vec_math.h"

namespace shoal::native::cpu {
namespace {

struct Head {
  const float* q;  // row 0 of this sequence, column h*head_dim
  const float* k;
  const float* v;
  float* out;
  size_t ld;      // q/k/v row stride
  size_t ld_out;  // out row stride
  size_t len;
  size_t keys;  // rows 0..keys-1 are keys and values (1 <= keys <= len)
  size_t dim;
  float scale;
  const float* bias = nullptr;  // RelativeBias::at(h): scores get bias[j − i] (null: none)
};

// Per-thread scratch, grown on demand and kept for the thread's lifetime.
struct Scratch {
  std::vector<float> kt;      // [dim][len_pad]
  std::vector<float> scores;  // [4][len_pad]
};
thread_local Scratch t_scratch;

// From this length on, two sgemm calls beat the register-blocked loops
// (bench BM_Attention, 1 thread, GFLOP/s loops vs sgemm: len 8: 23 vs 14,
// 16: 50 vs 27, 32: 65 vs 47, 64: 61 vs 58, 128: 60 vs 77, 512: 63 vs 90).
constexpr size_t kGemmMinLen = 96;

size_t Pad16(size_t n) { return (n + 15) & ~size_t{15}; }

SHOAL_AVX512 void HeadAvx512(const Head& h, Scratch& s) {
  const size_t len = h.len, keys = h.keys, dim = h.dim, lp = Pad16(keys);
  s.kt.resize(dim * lp);
  s.scores.resize(4 * lp);
  float* kt = s.kt.data();
  // Transpose K_h; pad columns are zero and masked out of the softmax.
  for (size_t d = 0; d < dim; ++d) {
    float* dst = kt + d * lp;
    for (size_t j = 0; j < keys; ++j) dst[j] = h.k[j * h.ld + d];
    for (size_t j = keys; j < lp; ++j) dst[j] = 0.0f;
  }
  const size_t lfull = keys & ~size_t{15};
  const __mmask16 ltail = static_cast<__mmask16>((1u << (keys - lfull)) - 1);
  const size_t dfull = dim & ~size_t{15};
  const __mmask16 dtail = static_cast<__mmask16>((1u << (dim - dfull)) - 1);

  for (size_t i0 = 0; i0 < len; i0 += 4) {
    const size_t nr = std::min<size_t>(4, len - i0);
    float* sc[4];
    for (size_t r = 0; r < 4; ++r) sc[r] = s.scores.data() + r * lp;
    // scores[r][j] = Σ_d q[i0+r][d] · kt[d][j], 16 keys per vector.
    for (size_t j = 0; j < lp; j += 16) {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      const float* q0 = h.q + i0 * h.ld;
      for (size_t d = 0; d < dim; ++d) {
        const __m512 kv = _mm512_loadu_ps(kt + d * lp + j);
        a0 = _mm512_fmadd_ps(_mm512_set1_ps(q0[d]), kv, a0);
        if (nr > 1) a1 = _mm512_fmadd_ps(_mm512_set1_ps(q0[h.ld + d]), kv, a1);
        if (nr > 2) a2 = _mm512_fmadd_ps(_mm512_set1_ps(q0[2 * h.ld + d]), kv, a2);
        if (nr > 3) a3 = _mm512_fmadd_ps(_mm512_set1_ps(q0[3 * h.ld + d]), kv, a3);
      }
      _mm512_storeu_ps(sc[0] + j, a0);
      _mm512_storeu_ps(sc[1] + j, a1);
      _mm512_storeu_ps(sc[2] + j, a2);
      _mm512_storeu_ps(sc[3] + j, a3);
    }
    // Fused scale + softmax per row; probabilities left unnormalized, the
    // 1/sum is applied to the output row.
    float inv_sum[4];
    const __m512 vscale = _mm512_set1_ps(h.scale);
    for (size_t r = 0; r < nr; ++r) {
      float* row = sc[r];
      __m512 vmax = _mm512_set1_ps(-INFINITY);
      size_t j = 0;
      for (; j < lfull; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(row + j));
      if (ltail) vmax = _mm512_mask_max_ps(vmax, ltail, vmax, _mm512_loadu_ps(row + j));
      const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(vmax) * h.scale);
      __m512 vsum = _mm512_setzero_ps();
      for (j = 0; j < lp; j += 16) {
        __m512 e = Exp512(_mm512_fmsub_ps(_mm512_loadu_ps(row + j), vscale, m));
        if (j == lfull) e = _mm512_maskz_mov_ps(ltail, e);  // padding keys get p = 0
        vsum = _mm512_add_ps(vsum, e);
        _mm512_storeu_ps(row + j, e);
      }
      inv_sum[r] = 1.0f / _mm512_reduce_add_ps(vsum);
    }
    // out[i0+r] = Σ_j p[r][j] · v[j], 16 head columns per vector.
    for (size_t c = 0; c < dim; c += 16) {
      const __mmask16 m = c < dfull ? static_cast<__mmask16>(0xffff) : dtail;
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (size_t j = 0; j < keys; ++j) {
        const __m512 vv = _mm512_maskz_loadu_ps(m, h.v + j * h.ld + c);
        a0 = _mm512_fmadd_ps(_mm512_set1_ps(sc[0][j]), vv, a0);
        a1 = _mm512_fmadd_ps(_mm512_set1_ps(sc[1][j]), vv, a1);
        a2 = _mm512_fmadd_ps(_mm512_set1_ps(sc[2][j]), vv, a2);
        a3 = _mm512_fmadd_ps(_mm512_set1_ps(sc[3][j]), vv, a3);
      }
      const __m512 acc[4] = {a0, a1, a2, a3};
      for (size_t r = 0; r < nr; ++r) {
        _mm512_mask_storeu_ps(h.out + (i0 + r) * h.ld_out + c, m,
                              _mm512_mul_ps(acc[r], _mm512_set1_ps(inv_sum[r])));
      }
    }
  }
}

// Softmax of one row of n scores in place, left unnormalized; returns
// 1 / Σ_j exp(row[j] − max).
SHOAL_AVX512 float SoftmaxRowAvx512(float* row, size_t n) {
  const size_t full = n & ~size_t{15};
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - full)) - 1);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  size_t j = 0;
  for (; j < full; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(row + j));
  if (tail) vmax = _mm512_mask_max_ps(vmax, tail, vmax, _mm512_maskz_loadu_ps(tail, row + j));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  __m512 vsum = _mm512_setzero_ps();
  for (j = 0; j < full; j += 16) {
    const __m512 e = Exp512(_mm512_sub_ps(_mm512_loadu_ps(row + j), m));
    vsum = _mm512_add_ps(vsum, e);
    _mm512_storeu_ps(row + j, e);
  }
  if (tail) {
    const __m512 e = _mm512_maskz_mov_ps(tail, Exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, row + j), m)));
    vsum = _mm512_add_ps(vsum, e);
    _mm512_mask_storeu_ps(row + j, tail, e);
  }
  return 1.0f / _mm512_reduce_add_ps(vsum);
}

float SoftmaxRowPortable(float* row, size_t n) {
  float mx = -INFINITY;
  for (size_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
  float sum = 0.0f;
  for (size_t j = 0; j < n; ++j) sum += (row[j] = std::exp(row[j] - mx));
  return 1.0f / sum;
}

// Softmax of `len` rows of `keys` scores (row stride lp) in place, left
// unnormalized, inv[i] = 1 / the row's sum. window > 0: row i keeps only
// the columns at most `window` from i; causal: only the columns up to i; the
// others get probability 0 (and a row with no key left, all of them: its
// output is zero).
void SoftmaxRows(float* sc, size_t len, size_t keys, size_t lp, size_t window, bool causal, float* inv, bool avx) {
  for (size_t i = 0; i < len; ++i) {
    float* row = sc + i * lp;
    size_t hi = window > 0 ? std::min(keys, i + window + 1) : keys;
    if (causal) hi = std::min(hi, i + 1);
    const size_t lo = std::min(window > 0 && i > window ? i - window : 0, hi);
    std::fill(row, row + lo, 0.0f);
    std::fill(row + hi, row + keys, 0.0f);
    if (lo == hi) {
      inv[i] = 0.0f;
      continue;
    }
    inv[i] = avx ? SoftmaxRowAvx512(row + lo, hi - lo) : SoftmaxRowPortable(row + lo, hi - lo);
  }
}

// Two sgemm calls per head (single-threaded: see the top of the file), on any
// ISA (oneDNN dispatches its own kernels). A window or causality masks S
// before the softmax (the full L·L products are still computed).
void HeadGemm(const Head& h, Scratch& s, bool avx, size_t window, bool causal) {
  const size_t len = h.len, keys = h.keys, dim = h.dim, lp = Pad16(keys);
  s.scores.resize(len * lp);
  s.kt.resize(len);
  float* sc = s.scores.data();
  float* inv = s.kt.data();
  const auto L = static_cast<dnnl_dim_t>(len), K = static_cast<dnnl_dim_t>(keys), D = static_cast<dnnl_dim_t>(dim);
  const auto ld = static_cast<dnnl_dim_t>(h.ld);
  dnnl_sgemm('N', 'T', L, K, D, h.scale, h.q, ld, h.k, ld, 0.0f, sc, static_cast<dnnl_dim_t>(lp));
  if (h.bias) {
    for (size_t i = 0; i < len; ++i) {
      float* row = sc + i * lp;
      const float* b = h.bias - i;  // b[j] is distance j − i's
      for (size_t j = 0; j < keys; ++j) row[j] += b[j];
    }
  }
  SoftmaxRows(sc, len, keys, lp, window, causal, inv, avx);
  dnnl_sgemm('N', 'N', L, D, K, 1.0f, sc, static_cast<dnnl_dim_t>(lp), h.v, ld, 0.0f, h.out,
             static_cast<dnnl_dim_t>(h.ld_out));
  for (size_t i = 0; i < len; ++i) {
    float* o = h.out + i * h.ld_out;
    const float f = inv[i];
    for (size_t c = 0; c < dim; ++c) o[c] *= f;
  }
}

// DeBERTa's disentangled attention for one (sequence, head): S = scale ·
// (Q·Kᵀ + C2P + P2C), with C2P = Q·pos_kᵀ and P2C = K·pos_qᵀ computed as
// sgemms over the relative rows this length can read (rows[] is monotonic
// in the distance) and gathered per (i, j); then HeadGemm's softmax and P·V.
void HeadDisentangled(const Head& h, const float* pos_q, const float* pos_k, size_t ld_pos,
                      const int32_t* row_of /* indexed by i − j */, Scratch& s, bool avx) {
  const size_t len = h.len, keys = h.keys, dim = h.dim, lp = Pad16(keys);
  const int32_t lo = row_of[-(static_cast<ptrdiff_t>(keys) - 1)], hi = row_of[static_cast<ptrdiff_t>(len) - 1];
  const size_t rel = static_cast<size_t>(hi - lo) + 1;
  s.scores.resize(len * lp + (len + keys) * rel);
  s.kt.resize(len);
  float* sc = s.scores.data();
  float* c2p = sc + len * lp;
  float* p2c = c2p + len * rel;
  float* inv = s.kt.data();
  const auto L = static_cast<dnnl_dim_t>(len), K = static_cast<dnnl_dim_t>(keys), D = static_cast<dnnl_dim_t>(dim),
             R = static_cast<dnnl_dim_t>(rel);
  const auto ld = static_cast<dnnl_dim_t>(h.ld), ldp = static_cast<dnnl_dim_t>(ld_pos);
  dnnl_sgemm('N', 'T', L, K, D, h.scale, h.q, ld, h.k, ld, 0.0f, sc, static_cast<dnnl_dim_t>(lp));
  if (pos_k != nullptr) dnnl_sgemm('N', 'T', L, R, D, h.scale, h.q, ld, pos_k + lo * ld_pos, ldp, 0.0f, c2p, R);
  if (pos_q != nullptr) dnnl_sgemm('N', 'T', K, R, D, h.scale, h.k, ld, pos_q + lo * ld_pos, ldp, 0.0f, p2c, R);
  for (size_t i = 0; i < len; ++i) {
    float* row = sc + i * lp;
    const float* c = c2p + i * rel;
    for (size_t j = 0; j < keys; ++j) {
      const size_t r = static_cast<size_t>(row_of[static_cast<ptrdiff_t>(i) - static_cast<ptrdiff_t>(j)] - lo);
      if (pos_k != nullptr) row[j] += c[r];
      if (pos_q != nullptr) row[j] += p2c[j * rel + r];
    }
  }
  SoftmaxRows(sc, len, keys, lp, 0, false, inv, avx);
  dnnl_sgemm('N', 'N', L, D, K, 1.0f, sc, static_cast<dnnl_dim_t>(lp), h.v, ld, 0.0f, h.out,
             static_cast<dnnl_dim_t>(h.ld_out));
  for (size_t i = 0; i < len; ++i) {
    float* o = h.out + i * h.ld_out;
    for (size_t c = 0; c < dim; ++c) o[c] *= inv[i];
  }
}

void HeadPortable(const Head& h, Scratch& s) {
  const size_t len = h.len, keys = h.keys, dim = h.dim;
  s.kt.resize(dim * keys);
  s.scores.resize(keys);
  float* kt = s.kt.data();
  float* sc = s.scores.data();
  for (size_t d = 0; d < dim; ++d) {
    for (size_t j = 0; j < keys; ++j) kt[d * keys + j] = h.k[j * h.ld + d];
  }
  for (size_t i = 0; i < len; ++i) {
    const float* q = h.q + i * h.ld;
    std::fill(sc, sc + keys, 0.0f);
    for (size_t d = 0; d < dim; ++d) {
      const float qd = q[d];
      const float* kr = kt + d * keys;
      for (size_t j = 0; j < keys; ++j) sc[j] += qd * kr[j];
    }
    float mx = -INFINITY;
    for (size_t j = 0; j < keys; ++j) mx = std::max(mx, sc[j]);
    float sum = 0.0f;
    for (size_t j = 0; j < keys; ++j) {
      sc[j] = std::exp((sc[j] - mx) * h.scale);
      sum += sc[j];
    }
    const float inv = 1.0f / sum;
    float* o = h.out + i * h.ld_out;
    std::fill(o, o + dim, 0.0f);
    for (size_t j = 0; j < keys; ++j) {
      const float p = sc[j] * inv;
      const float* vr = h.v + j * h.ld;
      for (size_t c = 0; c < dim; ++c) o[c] += p * vr[c];
    }
  }
}

// Calls run(h, head) for each (sequence, head) pair with rows: h the pair's
// slice of q, k, v and out, its key limit in, no ALiBi. The pairs are spread
// over up to `threads` OpenMP threads, dynamically (lengths differ).
template <class Run>
void ForEachHead(const float* q, const float* k, const float* v, size_t ld, float* out,
                 std::span<const uint32_t> offsets, int heads, int head_dim, float scale, int threads,
                 std::span<const uint32_t> keys, Run run) {
  if (offsets.size() < 2 || heads <= 0 || head_dim <= 0) return;
  const size_t pairs = (offsets.size() - 1) * static_cast<size_t>(heads);
  const size_t dim = static_cast<size_t>(head_dim), ld_out = static_cast<size_t>(heads) * dim;
  const int nt = std::max(1, std::min<int>(threads, static_cast<int>(pairs)));
  OmpThreads scope(nt);
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
  for (size_t p = 0; p < pairs; ++p) {
    const size_t s = p / static_cast<size_t>(heads);
    const size_t hd = p % static_cast<size_t>(heads);
    const size_t begin = offsets[s], len = offsets[s + 1] - offsets[s];
    if (len == 0) continue;
    const size_t nkeys = keys.empty() || keys[s] == 0 ? len : std::min<size_t>(keys[s], len);
    const size_t col = hd * dim;
    run(Head{q + begin * ld + col, k + begin * ld + col, v + begin * ld + col, out + begin * ld_out + col, ld,
             ld_out, len, nkeys, dim, scale, nullptr},
        hd);
  }
}

}  // namespace

void Attention(const float* q, const float* k, const float* v, size_t ld, float* out,
               std::span<const uint32_t> offsets, int heads, int head_dim, float scale,
               int threads, size_t window, std::span<const uint32_t> keys, const RelativeBias* bias,
               bool causal) {
  const bool avx = UseAvx512();
  ForEachHead(q, k, v, ld, out, offsets, heads, head_dim, scale, threads, keys, [&](Head h, size_t hd) {
    h.bias = bias ? bias->at(hd) : nullptr;
    // A window narrower than the sequence or causality masks scores, a
    // bias adds to them: only the sgemm path does.
    const size_t masked = window > 0 && h.len > window + 1 ? window : 0;
    const bool past_only = causal && h.len > 1;
    if (h.len >= kGemmMinLen || masked > 0 || h.bias || past_only) {
      HeadGemm(h, t_scratch, avx, masked, past_only);
    } else if (avx) {
      HeadAvx512(h, t_scratch);
    } else {
      HeadPortable(h, t_scratch);
    }
  });
}

void DisentangledAttention(const float* q, const float* k, const float* v, size_t ld, float* out,
                           std::span<const uint32_t> offsets, int heads, int head_dim, float scale,
                           const float* pos_q, const float* pos_k, size_t ld_pos, std::span<const int32_t> rows,
                           int threads, std::span<const uint32_t> keys) {
  if (rows.empty()) return;
  const int32_t* row_of = rows.data() + rows.size() / 2;  // distance 0
  const bool avx = UseAvx512();
  const size_t dim = static_cast<size_t>(head_dim);
  ForEachHead(q, k, v, ld, out, offsets, heads, head_dim, scale, threads, keys, [&](const Head& h, size_t hd) {
    HeadDisentangled(h, pos_q ? pos_q + hd * dim : nullptr, pos_k ? pos_k + hd * dim : nullptr, ld_pos, row_of,
                     t_scratch, avx);
  });
}

}  // namespace shoal::native::cpu
