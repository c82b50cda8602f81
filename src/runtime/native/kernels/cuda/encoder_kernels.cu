// Row-wise and elementwise kernels of the encoder (encoder_kernels.h); the
// attention kernel is in attention.cu.
//
// LayerNorm computes mean and variance in two exact passes, as PyTorch does
// (biased variance): over registers in the one-warp-per-row kernel of the
// common widths, over an fp32 copy of the row in shared memory in the
// one-block-per-row kernels (other widths, the embeddings, pooling).
#include "runtime/native/kernels/cuda/encoder_kernels.h"

#include <cmath>

namespace shoal::native::cuda {
namespace {

constexpr int kRowThreads = 256;

// The sum of `v` over the block; every thread gets it. `scratch` holds 32
// floats in shared memory.
__device__ float BlockSum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read from a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? scratch[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// LayerNorm of the fp32 row in shared memory `row`, written to `out`.
__device__ void NormalizeRow(const float* row, size_t width, const float* gamma, const float* beta, float eps,
                             bf16* out, float* scratch) {
  float s = 0.0f;
  for (size_t c = threadIdx.x; c < width; c += blockDim.x) s += row[c];
  const float mean = BlockSum(s, scratch) / static_cast<float>(width);
  float q = 0.0f;
  for (size_t c = threadIdx.x; c < width; c += blockDim.x) {
    const float d = row[c] - mean;
    q += d * d;
  }
  const float inv = rsqrtf(BlockSum(q, scratch) / static_cast<float>(width) + eps);
  for (size_t c = threadIdx.x; c < width; c += blockDim.x) {
    out[c] = __float2bfloat16((row[c] - mean) * inv * gamma[c] + beta[c]);
  }
}

__global__ void EmbedTokensKernel(const int32_t* ids, const int32_t* positions, const int32_t* types,
                                  size_t width, const bf16* word, const bf16* position, const bf16* type,
                                  const float* gamma, const float* beta, float eps, bf16* out) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  const size_t r = blockIdx.x;
  const bf16* w = word + static_cast<size_t>(ids[r]) * width;
  const bf16* p = position + static_cast<size_t>(positions[r]) * width;
  const bf16* t = type + static_cast<size_t>(types[r]) * width;
  for (size_t c = threadIdx.x; c < width; c += blockDim.x) {
    row[c] = __bfloat162float(w[c]) + __bfloat162float(p[c]) + __bfloat162float(t[c]);
  }
  __syncthreads();
  NormalizeRow(row, width, gamma, beta, eps, out + r * width, scratch);
}

__global__ void LayerNormRowKernel(const bf16* x, size_t width, const float* gamma, const float* beta, float eps,
                                   bf16* out) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  const size_t r = blockIdx.x;
  for (size_t c = threadIdx.x; c < width; c += blockDim.x) row[c] = __bfloat162float(x[r * width + c]);
  __syncthreads();
  NormalizeRow(row, width, gamma, beta, eps, out + r * width, scratch);
}

// One warp per row of width 128·N: each lane holds N groups of 4 values
// (8-byte loads, coalesced across the warp), so mean and variance are warp
// shuffles with no shared memory and no block barrier.
template <int N>
__global__ void LayerNormWarpKernel(const bf16* __restrict__ x, size_t rows, const float* __restrict__ gamma,
                                    const float* __restrict__ beta, float eps, bf16* __restrict__ out) {
  constexpr int kWidth = 128 * N;
  const size_t r = blockIdx.x * static_cast<size_t>(blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  const int lane = threadIdx.x % 32;
  const bf16* src = x + r * kWidth;
  float v[N][4];
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const uint2 raw = *reinterpret_cast<const uint2*>(src + (i * 32 + lane) * 4);
    const bf16* b = reinterpret_cast<const bf16*>(&raw);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      v[i][k] = __bfloat162float(b[k]);
      sum += v[i][k];
    }
  }
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const float mean = sum / kWidth;
  float sq = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float d = v[i][k] - mean;
      sq += d * d;
    }
  }
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  const float inv = rsqrtf(sq / kWidth + eps);
  bf16* dst = out + r * kWidth;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int c = (i * 32 + lane) * 4;
    const float4 g = *reinterpret_cast<const float4*>(gamma + c);
    const float4 b = *reinterpret_cast<const float4*>(beta + c);
    uint2 raw;
    bf16* o = reinterpret_cast<bf16*>(&raw);
    o[0] = __float2bfloat16((v[i][0] - mean) * inv * g.x + b.x);
    o[1] = __float2bfloat16((v[i][1] - mean) * inv * g.y + b.y);
    o[2] = __float2bfloat16((v[i][2] - mean) * inv * g.z + b.z);
    o[3] = __float2bfloat16((v[i][3] - mean) * inv * g.w + b.w);
    *reinterpret_cast<uint2*>(dst + c) = raw;
  }
}

__device__ float Apply(float x, Activation act) {
  switch (act) {
    case Activation::kGelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case Activation::kGeluTanh:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case Activation::kRelu: return fmaxf(x, 0.0f);
    case Activation::kTanh: return tanhf(x);
    case Activation::kNone: break;
  }
  return x;
}

// Eight values per thread per step (16-byte loads) where n allows, else one.
__global__ void ActivateKernel(bf16* x, size_t n, Activation act) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (n % 8 == 0) {
    uint4* v = reinterpret_cast<uint4*>(x);
    for (size_t i = first; i < n / 8; i += stride) {
      uint4 raw = v[i];
      bf16* b = reinterpret_cast<bf16*>(&raw);
#pragma unroll
      for (int k = 0; k < 8; ++k) b[k] = __float2bfloat16(Apply(__bfloat162float(b[k]), act));
      v[i] = raw;
    }
    return;
  }
  for (size_t i = first; i < n; i += stride) x[i] = __float2bfloat16(Apply(__bfloat162float(x[i]), act));
}

__global__ void PoolKernel(const bf16* x, const int32_t* offsets, size_t width, bool mean, bool normalize,
                           float* out) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  const int s = blockIdx.x;
  const int begin = offsets[s], end = mean ? offsets[s + 1] : offsets[s] + 1;
  const float inv_len = end > begin ? 1.0f / static_cast<float>(end - begin) : 0.0f;
  float q = 0.0f;
  for (size_t c = threadIdx.x; c < width; c += blockDim.x) {
    float v = 0.0f;
    for (int r = begin; r < end; ++r) v += __bfloat162float(x[static_cast<size_t>(r) * width + c]);
    v *= inv_len;
    row[c] = v;
    q += v * v;
  }
  float scale = 1.0f;
  if (normalize) scale = 1.0f / fmaxf(sqrtf(BlockSum(q, scratch)), 1e-12f);
  for (size_t c = threadIdx.x; c < width; c += blockDim.x) out[static_cast<size_t>(s) * width + c] = row[c] * scale;
}

__global__ void GatherFirstRowsKernel(const bf16* x, const int32_t* offsets, size_t width, bf16* out) {
  const int s = blockIdx.x;
  const bf16* src = x + static_cast<size_t>(offsets[s]) * width;
  for (size_t c = threadIdx.x; c < width; c += blockDim.x) out[static_cast<size_t>(s) * width + c] = src[c];
}

}  // namespace

cudaError_t EmbedTokens(const int32_t* ids, const int32_t* positions, const int32_t* types, size_t rows,
                        size_t width, const bf16* word, const bf16* position, const bf16* type,
                        const float* gamma, const float* beta, float eps, bf16* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  EmbedTokensKernel<<<rows, kRowThreads, width * sizeof(float), stream>>>(ids, positions, types, width, word,
                                                                           position, type, gamma, beta, eps, out);
  return cudaGetLastError();
}

template <int N>
cudaError_t LaunchLayerNormWarp(const bf16* x, size_t rows, const float* gamma, const float* beta, float eps,
                                bf16* out, cudaStream_t stream) {
  constexpr int kRowsPerBlock = 4;
  const size_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  LayerNormWarpKernel<N><<<blocks, 32 * kRowsPerBlock, 0, stream>>>(x, rows, gamma, beta, eps, out);
  return cudaGetLastError();
}

cudaError_t LayerNorm(const bf16* x, size_t rows, size_t width, const float* gamma, const float* beta, float eps,
                      bf16* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  // gamma and beta are read as float4: their buffers come from cudaMalloc
  // (256-byte aligned) and the widths below are multiples of 4.
  switch (width) {
    case 256: return LaunchLayerNormWarp<2>(x, rows, gamma, beta, eps, out, stream);
    case 384: return LaunchLayerNormWarp<3>(x, rows, gamma, beta, eps, out, stream);
    case 512: return LaunchLayerNormWarp<4>(x, rows, gamma, beta, eps, out, stream);
    case 768: return LaunchLayerNormWarp<6>(x, rows, gamma, beta, eps, out, stream);
    case 1024: return LaunchLayerNormWarp<8>(x, rows, gamma, beta, eps, out, stream);
  }
  LayerNormRowKernel<<<rows, kRowThreads, width * sizeof(float), stream>>>(x, width, gamma, beta, eps, out);
  return cudaGetLastError();
}

cudaError_t Activate(bf16* x, size_t n, Activation act, cudaStream_t stream) {
  if (n == 0 || act == Activation::kNone) return cudaSuccess;
  const size_t per_thread = n % 8 == 0 ? 8 : 1;
  const size_t blocks = std::min<size_t>((n / per_thread + 255) / 256, 65535);
  ActivateKernel<<<blocks, 256, 0, stream>>>(x, n, act);
  return cudaGetLastError();
}

cudaError_t Pool(const bf16* x, const int32_t* offsets, int sequences, size_t width, bool mean, bool normalize,
                 float* out, cudaStream_t stream) {
  if (sequences == 0) return cudaSuccess;
  PoolKernel<<<sequences, kRowThreads, width * sizeof(float), stream>>>(x, offsets, width, mean, normalize, out);
  return cudaGetLastError();
}

cudaError_t GatherFirstRows(const bf16* x, const int32_t* offsets, int sequences, size_t width, bf16* out,
                            cudaStream_t stream) {
  if (sequences == 0) return cudaSuccess;
  GatherFirstRowsKernel<<<sequences, kRowThreads, 0, stream>>>(x, offsets, width, out);
  return cudaGetLastError();
}

}  // namespace shoal::native::cuda
