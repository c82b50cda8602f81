// Self-attention over packed variable-length sequences (encoder_kernels.h),
// the staged kernel (AttentionKernel::kStaged; attention_registers.cu is the
// other), one pass in the flash-attention manner: scores, softmax and the
// weighted sum of values per tile of keys, with a running max and sum per query row,
// so the [len, len] score matrix never exists in memory and no padding is
// computed.
//
// Work split: a block of 4 warps takes 64 query rows of one head of one
// sequence (grid: heads × sequences × ⌈max_len / 64⌉; blocks past their
// sequence's end return at once). Each warp owns 16 query rows. For every
// tile of 64 keys the block stages K and V in shared memory; a warp computes
// its 16×64 scores with bf16 tensor-core MMAs (WMMA, fp32 accumulate), then
// two lanes per query row update the row's max, sum and output (fp32, in
// registers), and the warp multiplies its probabilities (rounded to bf16, as
// the peers do) by V on the tensor cores again.
//
// Shared memory (dynamic: 53 KiB at head_dim 64, over the 48 KiB static
// limit): Q, K, V tiles (64 × head_dim bf16 each), scores (4 × 16 × 64 fp32)
// and probabilities (4 × 16 × 64 bf16). Every row is padded (by 16 bytes for
// the bf16 tiles, 16 for the scores) so the 16 rows a warp touches at once
// fall in different banks; and a lane of the softmax takes every other
// column of its row (2j + half) rather than a contiguous half, which with
// the padding leaves at most 2-way bank conflicts where a naive layout had
// 16-way ones.
#include "runtime/native/kernels/cuda/encoder_kernels.h"

#include <mma.h>

#include <cmath>

namespace shoal::native::cuda {
namespace {

using namespace nvcuda;

constexpr int kTile = 64;   // query rows per block; keys per step
constexpr int kWarps = 4;   // 16 query rows each
constexpr int kThreads = kWarps * 32;
constexpr int kScoreLd = kTile + 4;  // floats per score row (padded)
constexpr int kProbLd = kTile + 8;   // bf16 per probability row (padded)

// The block's shared memory, carved from the dynamic allocation.
template <int D>
struct Smem {
  static constexpr int kLd = D + 8;  // bf16 per Q/K/V row (padded)
  bf16 (*q)[kLd];
  bf16 (*k)[kLd];
  bf16 (*v)[kLd];
  float (*scores)[16][kScoreLd];  // per warp
  bf16 (*probs)[16][kProbLd];     // per warp

  static constexpr size_t kBytes = 3 * sizeof(bf16) * kTile * kLd + sizeof(float) * kWarps * 16 * kScoreLd +
                                   sizeof(bf16) * kWarps * 16 * kProbLd;

  __device__ explicit Smem(unsigned char* base) {
    q = reinterpret_cast<bf16(*)[kLd]>(base);
    k = q + kTile;
    v = k + kTile;
    scores = reinterpret_cast<float(*)[16][kScoreLd]>(v + kTile);
    probs = reinterpret_cast<bf16(*)[16][kProbLd]>(scores + kWarps);
  }
};

// Copies rows [first, first + 64) of one head's column block (width D) into
// `tile`, zeros past `len`. 16-byte vectors: D is a multiple of 16 and every
// row start is 16-byte aligned (3·hidden·2 bytes apart, hidden = heads·D).
template <int D, int Ld>
__device__ void LoadTile(const bf16* base, size_t ld, int first, int len, bf16 (*tile)[Ld]) {
  constexpr int kVectors = D / 8;
  for (int i = threadIdx.x; i < kTile * kVectors; i += kThreads) {
    const int r = i / kVectors, c = (i % kVectors) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (first + r < len) v = *reinterpret_cast<const uint4*>(base + static_cast<size_t>(first + r) * ld + c);
    *reinterpret_cast<uint4*>(&tile[r][c]) = v;
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    VarlenAttentionKernel(const bf16* __restrict__ qkv, const int32_t* __restrict__ offsets, int heads,
                          float scale_log2, bf16* __restrict__ out) {
  const int head = blockIdx.x, seq = blockIdx.y, q0 = blockIdx.z * kTile;
  const int begin = offsets[seq], len = offsets[seq + 1] - begin;
  if (q0 >= len) return;  // the whole block: no barrier has been reached yet

  extern __shared__ __align__(128) unsigned char smem_bytes[];
  const Smem<D> s(smem_bytes);
  constexpr int kLd = Smem<D>::kLd;

  const size_t hidden = static_cast<size_t>(heads) * D, ld = 3 * hidden;
  const bf16* rows = qkv + static_cast<size_t>(begin) * ld + static_cast<size_t>(head) * D;
  LoadTile<D, kLd>(rows, ld, q0, len, s.q);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 2, half = lane % 2;  // this lane's query row (of the warp's 16), and its columns 2j + half
  float row_max = -INFINITY, row_sum = 0.0f;
  float acc[D / 2];  // output columns 2d + half
#pragma unroll
  for (int d = 0; d < D / 2; ++d) acc[d] = 0.0f;
  float* srow = s.scores[warp][r];
  bf16* prow = s.probs[warp][r];

  for (int k0 = 0; k0 < len; k0 += kTile) {
    LoadTile<D, kLd>(rows + hidden, ld, k0, len, s.k);
    LoadTile<D, kLd>(rows + 2 * hidden, ld, k0, len, s.v);
    __syncthreads();

    // Scores: the warp's 16 query rows against the 64 keys.
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> sc[kTile / 16];
#pragma unroll
    for (int n = 0; n < kTile / 16; ++n) wmma::fill_fragment(sc[n], 0.0f);
#pragma unroll
    for (int kk = 0; kk < D; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
      wmma::load_matrix_sync(a, &s.q[warp * 16][kk], kLd);
#pragma unroll
      for (int n = 0; n < kTile / 16; ++n) {
        // Kᵀ as a column-major 16×16 block: element (k, j) is K[j][k].
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b;
        wmma::load_matrix_sync(b, &s.k[n * 16][kk], kLd);
        wmma::mma_sync(sc[n], a, b, sc[n]);
      }
    }
#pragma unroll
    for (int n = 0; n < kTile / 16; ++n) {
      wmma::store_matrix_sync(&s.scores[warp][0][n * 16], sc[n], kScoreLd, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax over this tile: lanes 2r and 2r+1 share row r.
    const int valid = min(kTile, len - k0);  // ≥ 1
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kTile / 2; ++j) {
      const int col = 2 * j + half;
      const float v = col < valid ? srow[col] * scale_log2 : -INFINITY;
      srow[col] = v;
      tile_max = fmaxf(tile_max, v);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float new_max = fmaxf(row_max, tile_max);  // finite: key 0 of the tile is valid
    const float rescale = exp2f(row_max - new_max);   // 0 on the first tile
    float tile_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kTile / 2; ++j) {
      const int col = 2 * j + half;
      const bf16 p = __float2bfloat16(exp2f(srow[col] - new_max));
      prow[col] = p;
      tile_sum += __bfloat162float(p);
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    row_sum = row_sum * rescale + tile_sum;
    row_max = new_max;
    __syncwarp();

    // probabilities · V: 16 × D, staged through the warp's score rows.
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> o[D / 16];
#pragma unroll
    for (int n = 0; n < D / 16; ++n) wmma::fill_fragment(o[n], 0.0f);
#pragma unroll
    for (int kk = 0; kk < kTile; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
      wmma::load_matrix_sync(a, &s.probs[warp][0][kk], kProbLd);
#pragma unroll
      for (int n = 0; n < D / 16; ++n) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b;
        wmma::load_matrix_sync(b, &s.v[kk][n * 16], kLd);
        wmma::mma_sync(o[n], a, b, o[n]);
      }
    }
#pragma unroll
    for (int n = 0; n < D / 16; ++n) {
      wmma::store_matrix_sync(&s.scores[warp][0][n * 16], o[n], kScoreLd, wmma::mem_row_major);
    }
    __syncwarp();
#pragma unroll
    for (int d = 0; d < D / 2; ++d) acc[d] = acc[d] * rescale + srow[2 * d + half];
    __syncthreads();  // every warp is done with k, v (and its scores) before the next load
  }

  const int q = q0 + warp * 16 + r;
  if (q < len) {
    const float inv = 1.0f / row_sum;
    bf16* dst = out + static_cast<size_t>(begin + q) * hidden + static_cast<size_t>(head) * D + half;
#pragma unroll
    for (int d = 0; d < D / 2; ++d) dst[2 * d] = __float2bfloat16(acc[d] * inv);
  }
}

template <int D>
cudaError_t Launch(const bf16* qkv, const int32_t* offsets, int sequences, int max_len, int heads, float scale,
                   bf16* out, cudaStream_t stream) {
  constexpr size_t kBytes = Smem<D>::kBytes;
  // Over 48 KiB of dynamic shared memory must be asked for, per device; it
  // is cheap to ask again.
  if (kBytes > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(VarlenAttentionKernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
    if (e != cudaSuccess) return e;
  }
  const dim3 grid(heads, sequences, (max_len + kTile - 1) / kTile);
  VarlenAttentionKernel<D><<<grid, kThreads, kBytes, stream>>>(qkv, offsets, heads, scale * 1.4426950408889634f,
                                                                out);
  return cudaGetLastError();
}

}  // namespace

bool AttentionSupportsHeadDim(int head_dim) {
  for (int d : kAttentionHeadDims) {
    if (d == head_dim) return true;
  }
  return false;
}

cudaError_t VarlenAttention(const bf16* qkv, const int32_t* offsets, int sequences, int max_len, int heads,
                            int head_dim, float scale, AttentionKernel kernel, bf16* out, cudaStream_t stream) {
  return kernel == AttentionKernel::kRegisters
             ? VarlenAttentionRegisters(qkv, offsets, sequences, max_len, heads, head_dim, scale, out, stream)
             : VarlenAttentionStaged(qkv, offsets, sequences, max_len, heads, head_dim, scale, out, stream);
}

cudaError_t VarlenAttentionStaged(const bf16* qkv, const int32_t* offsets, int sequences, int max_len, int heads,
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
