// The CUDA kernels of the encoder forward pass, besides the GEMMs (gemm.h):
// embeddings + LayerNorm, residual + LayerNorm, activations, attention over
// packed variable-length sequences, and pooling. Activations are bf16
// [tokens, width] row-major, packed with no padding; sequence s is rows
// [offsets[s], offsets[s+1]) (offsets on the device). Arithmetic inside each
// kernel is fp32; only what is stored is rounded to bf16.
//
// Each function queues one kernel on `stream` and returns the launch's
// status (cudaGetLastError); errors of the kernel itself surface at the next
// synchronization.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace shoal::native::cuda {

using bf16 = __nv_bfloat16;

enum class Activation { kNone, kGelu /* erf */, kGeluTanh, kRelu, kTanh };

// out[r] = LN(word[ids[r]] + position[positions[r]] + type[types[r]]) · gamma + beta.
cudaError_t EmbedTokens(const int32_t* ids, const int32_t* positions, const int32_t* types, size_t rows,
                        size_t width, const bf16* word, const bf16* position, const bf16* type,
                        const float* gamma, const float* beta, float eps, bf16* out, cudaStream_t stream);

// out[r] = LN(x[r]) · gamma + beta (the residual is already in x: the GEMM
// before it adds it); out may not alias x. One warp per row, in registers,
// for widths that are multiples of 128 up to 1024; a block per row otherwise.
cudaError_t LayerNorm(const bf16* x, size_t rows, size_t width, const float* gamma, const float* beta, float eps,
                      bf16* out, cudaStream_t stream);

// x = act(x), elementwise, for `n` values.
cudaError_t Activate(bf16* x, size_t n, Activation act, cudaStream_t stream);

// Multi-head self-attention, each sequence over its own rows only. qkv:
// [tokens, 3·heads·head_dim] (q | k | v, head h at columns h·head_dim of
// each); out: [tokens, heads·head_dim]. softmax(scale · q·kᵀ)·v with bf16
// tensor-core products and fp32 softmax (online, flash-attention style: no
// [len, len] matrix is ever stored). head_dim must be one of
// kAttentionHeadDims; max_len is the longest sequence.
//
// Two kernels compute it, for an A/B within one run: kRegisters keeps
// scores and probabilities in registers (mma.sync, attention_registers.cu);
// kStaged passes them through shared memory between WMMA calls
// (attention.cu), the first kernel of the backend.
enum class AttentionKernel { kRegisters, kStaged };
inline constexpr int kAttentionHeadDims[] = {16, 32, 64};
bool AttentionSupportsHeadDim(int head_dim);
cudaError_t VarlenAttention(const bf16* qkv, const int32_t* offsets, int sequences, int max_len, int heads,
                            int head_dim, float scale, AttentionKernel kernel, bf16* out, cudaStream_t stream);
cudaError_t VarlenAttentionStaged(const bf16* qkv, const int32_t* offsets, int sequences, int max_len, int heads,
                                  int head_dim, float scale, bf16* out, cudaStream_t stream);
cudaError_t VarlenAttentionRegisters(const bf16* qkv, const int32_t* offsets, int sequences, int max_len, int heads,
                                     int head_dim, float scale, bf16* out, cudaStream_t stream);

// out[s] = the first row (CLS) or the mean of the rows of sequence s, as
// fp32 [sequences, width]; then L2-normalized when `normalize`.
cudaError_t Pool(const bf16* x, const int32_t* offsets, int sequences, size_t width, bool mean, bool normalize,
                 float* out, cudaStream_t stream);

// out[s] = x[offsets[s]]: each sequence's first row, bf16 [sequences, width].
cudaError_t GatherFirstRows(const bf16* x, const int32_t* offsets, int sequences, size_t width, bf16* out,
                            cudaStream_t stream);

}  // namespace shoal::native::cuda
