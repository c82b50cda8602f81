// Self-attention over packed variable-length sequences with the scores and
// probabilities in registers (issue 28): the flash-attention-2 arrangement
// on mma.sync, where attention.cu stages every score tile through shared
// memory between WMMA calls.
//
// Work split, as attention.cu: a block of 4 warps takes 64 query rows of one
// head of one sequence (grid: heads × sequences × ⌈max_len / 64⌉); each warp
// owns 16 query rows and walks the sequence's keys 64 at a time.
//
// Per warp and key tile, everything in registers:
//   S = Q·Kᵀ     16 × 64, mma.sync m16n8k16 (bf16 in, fp32 accumulate); Q's
//                fragments are loaded once, K's with ldmatrix.
//   softmax      online, in base 2: each row's running max and sum live in
//                the 4 lanes that hold the row (a quad), reduced with two
//                shuffles; keys past the sequence's end are -inf.
//   O += P·V     P is S's accumulators rounded to bf16: an m16n8 accumulator
//                pair is exactly an m16k16 A fragment's register, so P never
//                leaves registers; V's fragments come transposed by
//                ldmatrix.trans.
// K and V tiles are double-buffered in shared memory with cp.async: the next
// tile loads while this one is computed.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .bf16): lane = 4·g + t.
//   A (16×16, row-major): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..),
//                         a3 = (g+8, 2t+8..)
//   B (16×8, "col"):      b0 = (k 2t..2t+1, n g), b1 = (k 2t+8.., n g)
//   C (16×8, fp32):       c0, c1 = (g, 2t, 2t+1), c2, c3 = (g+8, 2t, 2t+1)
// Shared rows are padded by 8 bf16 (16 bytes), so the 8 rows one ldmatrix
// phase or one 32-bit load touches fall in distinct banks.
#include "runtime/native/kernels/cuda/encoder_kernels.h"

#include <cmath>
#include <cstdint>

namespace shoal::native::cuda {
namespace {

constexpr int kTile = 64;  // query rows per block; keys per step
constexpr int kWarps = 4;  // 16 query rows each
constexpr int kThreads = kWarps * 32;

template <int D>
struct Smem {
  static constexpr int kLd = D + 8;  // bf16 per row (padded)
  bf16 q[kTile][kLd];
  bf16 k[2][kTile][kLd];
  bf16 v[2][kTile][kLd];
};

__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared, zero-filled when !valid (the source is not
// read then, but must still be an address).
__device__ __forceinline__ void CopyAsync16(void* dst, const void* src, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void CopyAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void CopyAsyncWaitAll() { asm volatile("cp.async.wait_group 0;\n" ::); }

// Rows [first, first + 64) of one head's column block (width D) into tile,
// zeros past len.
template <int D, int Ld>
__device__ __forceinline__ void LoadTileAsync(const bf16* base, size_t ld, int first, int len, bf16 (*tile)[Ld]) {
  constexpr int kVectors = D / 8;
  for (int i = threadIdx.x; i < kTile * kVectors; i += kThreads) {
    const int r = i / kVectors, c = (i % kVectors) * 8;
    const bool valid = first + r < len;
    const bf16* src = base + static_cast<size_t>(valid ? first + r : 0) * ld + c;
    CopyAsync16(&tile[r][c], src, valid);
  }
}

__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(row)));
}
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(row)));
}

// c += a · b, one m16n8k16 tensor-core product.
__device__ __forceinline__ void Mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair in one register, lo in the low half (the lower
// column, as a row-major load would put it).
__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&p);
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    RegisterAttentionKernel(const bf16* __restrict__ qkv, const int32_t* __restrict__ offsets, int heads,
                            float scale_log2, bf16* __restrict__ out) {
  static_assert(D % 16 == 0, "head_dim is a multiple of 16 (so O has an even number of n-tiles)");
  constexpr int kLd = Smem<D>::kLd;
  constexpr int kKeyTiles = kTile / 8;  // n-tiles of S
  constexpr int kDimTiles = D / 8;      // n-tiles of O
  const int head = blockIdx.x, seq = blockIdx.y, q0 = blockIdx.z * kTile;
  const int begin = offsets[seq], len = offsets[seq + 1] - begin;
  if (q0 >= len) return;  // the whole block: no barrier has been reached yet

  __shared__ __align__(128) Smem<D> s;
  const size_t hidden = static_cast<size_t>(heads) * D, ld = 3 * hidden;
  const bf16* rows = qkv + static_cast<size_t>(begin) * ld + static_cast<size_t>(head) * D;
  LoadTileAsync<D, kLd>(rows, ld, q0, len, s.q);
  LoadTileAsync<D, kLd>(rows + hidden, ld, 0, len, s.k[0]);
  LoadTileAsync<D, kLd>(rows + 2 * hidden, ld, 0, len, s.v[0]);
  CopyAsyncCommit();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int m0 = warp * 16;  // the warp's first query row in the tile

  float o[kDimTiles][4];
#pragma unroll
  for (int j = 0; j < kDimTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g, g + 8
  float row_sum[2] = {0.0f, 0.0f};            // this lane's share of each row's sum
  uint32_t qf[D / 16][4];

  CopyAsyncWaitAll();
  __syncthreads();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int c = kk * 16 + 2 * t;
    qf[kk][0] = *reinterpret_cast<const uint32_t*>(&s.q[m0 + g][c]);
    qf[kk][1] = *reinterpret_cast<const uint32_t*>(&s.q[m0 + g + 8][c]);
    qf[kk][2] = *reinterpret_cast<const uint32_t*>(&s.q[m0 + g][c + 8]);
    qf[kk][3] = *reinterpret_cast<const uint32_t*>(&s.q[m0 + g + 8][c + 8]);
  }

  // ldmatrix: lane l gives the address of row l % 8 of matrix l / 8.
  const int lr = lane % 8, lm = lane / 8;
  int buf = 0;
  for (int k0 = 0; k0 < len; k0 += kTile, buf ^= 1) {
    // The next tile's loads go out now; the barrier at the end of the last
    // step means nobody still reads that buffer.
    if (k0 + kTile < len) {
      LoadTileAsync<D, kLd>(rows + hidden, ld, k0 + kTile, len, s.k[buf ^ 1]);
      LoadTileAsync<D, kLd>(rows + 2 * hidden, ld, k0 + kTile, len, s.v[buf ^ 1]);
    }
    CopyAsyncCommit();
    const bf16(*k)[kLd] = s.k[buf];
    const bf16(*v)[kLd] = s.v[buf];

    // S = Q·Kᵀ. One ldmatrix.x4 gives two key n-tiles' b0, b1: matrices
    // (keys n·8.., dims kk·16), (n·8.., kk·16+8), (n·8+8.., kk·16), (n·8+8.., kk·16+8).
    float sc[kKeyTiles][4];
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int n = 0; n < kKeyTiles; n += 2) {
        uint32_t b[4];
        LdMatrixX4(b, &k[n * 8 + (lm / 2) * 8 + lr][kk * 16 + (lm % 2) * 8]);
        Mma(sc[n], qf[kk], b[0], b[1]);
        Mma(sc[n + 1], qf[kk], b[2], b[3]);
      }
    }

    // Online softmax, base 2. Key k0 is always valid, so each row's max is
    // finite.
    const int valid = len - k0;
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kKeyTiles; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = n * 8 + 2 * t + (e & 1);
        const float x = key < valid ? sc[n][e] * scale_log2 : -INFINITY;
        sc[n][e] = x;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], x);
      }
    }
    float rescale[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
      tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
      const float new_max = fmaxf(row_max[h], tile_max[h]);
      rescale[h] = exp2f(row_max[h] - new_max);  // 0 on the first tile
      row_max[h] = new_max;
      row_sum[h] *= rescale[h];
    }
#pragma unroll
    for (int j = 0; j < kDimTiles; ++j) {
      o[j][0] *= rescale[0];
      o[j][1] *= rescale[0];
      o[j][2] *= rescale[1];
      o[j][3] *= rescale[1];
    }

    // P (bf16) as A fragments, one per 16 keys: tiles 2m and 2m+1 of S.
    uint32_t pf[kTile / 16][4];
#pragma unroll
    for (int m = 0; m < kTile / 16; ++m) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float* c = sc[2 * m + half];
        const float p0 = exp2f(c[0] - row_max[0]), p1 = exp2f(c[1] - row_max[0]);
        const float p2 = exp2f(c[2] - row_max[1]), p3 = exp2f(c[3] - row_max[1]);
        const uint32_t top = PackBf16(p0, p1), bottom = PackBf16(p2, p3);
        // The sum is of the rounded probabilities, the weights V is taken with.
        const __nv_bfloat162 tb = *reinterpret_cast<const __nv_bfloat162*>(&top);
        const __nv_bfloat162 bb = *reinterpret_cast<const __nv_bfloat162*>(&bottom);
        row_sum[0] += __low2float(tb) + __high2float(tb);
        row_sum[1] += __low2float(bb) + __high2float(bb);
        pf[m][2 * half] = top;
        pf[m][2 * half + 1] = bottom;
      }
    }

    // O += P·V. One ldmatrix.x4.trans gives two dim n-tiles' b0, b1:
    // matrices (keys m·16.., dims j·8), (m·16+8.., j·8), (m·16.., j·8+8), (m·16+8.., j·8+8).
#pragma unroll
    for (int m = 0; m < kTile / 16; ++m) {
#pragma unroll
      for (int j = 0; j < kDimTiles; j += 2) {
        uint32_t b[4];
        LdMatrixX4Trans(b, &v[m * 16 + (lm % 2) * 8 + lr][j * 8 + (lm / 2) * 8]);
        Mma(o[j], pf[m], b[0], b[1]);
        Mma(o[j + 1], pf[m], b[2], b[3]);
      }
    }
    CopyAsyncWaitAll();
    __syncthreads();  // the next tile has landed, and everyone is done with this one
  }

  // Each row's sum over its quad, then the output rows (bf16 pairs).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int q = q0 + m0 + g + 8 * h;
    if (q >= len) continue;
    const float inv = 1.0f / row_sum[h];
    bf16* dst = out + static_cast<size_t>(begin + q) * hidden + static_cast<size_t>(head) * D + 2 * t;
#pragma unroll
    for (int j = 0; j < kDimTiles; ++j) {
      *reinterpret_cast<uint32_t*>(dst + j * 8) = PackBf16(o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
    }
  }
}

template <int D>
cudaError_t Launch(const bf16* qkv, const int32_t* offsets, int sequences, int max_len, int heads, float scale,
                   bf16* out, cudaStream_t stream) {
  const dim3 grid(heads, sequences, (max_len + kTile - 1) / kTile);
  RegisterAttentionKernel<D><<<grid, kThreads, 0, stream>>>(qkv, offsets, heads, scale * 1.4426950408889634f, out);
  return cudaGetLastError();
}

}  // namespace

cudaError_t VarlenAttentionRegisters(const bf16* qkv, const int32_t* offsets, int sequences, int max_len, int heads,
                                     int head_dim, float scale, bf16* out, cudaStream_t stream) {
  if (sequences == 0 || max_len == 0) return cudaSuccess;
  switch (head_dim) {
    case 16: return Launch<16>(qkv, offsets, sequences, max_len, heads, scale, out, stream);
    case 32: return Launch<32>(qkv, offsets, sequences, max_len, heads, scale, out, stream);
    case 64: return Launch<64>(qkv, offsets, sequences, max_len, heads, scale, out, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace shoal::native::cuda
