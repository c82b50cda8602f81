// CPU kernels a decoder-only (Llama-family) forward step adds to the
// encoder's (kernels.h): RMSNorm, rotary position embeddings, the SwiGLU
// gate, and attention over a paged KV cache.
//
// Rows are tokens, packed with no padding ([rows, width], row stride given).
// Threading: as kernels.h — each call uses at most `threads` OpenMP threads of
// the calling thread's team and keeps no shared mutable state; scratch is
// thread_local.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace shoal::native::cpu {

// out[r] = x[r] / sqrt(mean(x[r]²) + eps) * weight, over `cols`. Rows are
// `ld_x` / `ld_out` floats apart; out may be x. Accumulates in fp32 as
// PyTorch does for fp32 inputs.
void RmsNorm(const float* x, size_t ld_x, float* out, size_t ld_out, size_t rows, size_t cols,
             const float* weight, float eps, int threads);

// Rotary embedding, in place, on `heads` heads of `head_dim` at the start of
// each row (`ld` floats apart): the "rotate half" convention of Hugging Face
// Llama — element i pairs with i + head_dim/2. Row r is at positions[r];
// `cos_sin` holds, per position, head_dim/2 cosines then head_dim/2 sines.
void Rope(float* x, size_t ld, size_t rows, int heads, int head_dim, const uint32_t* positions,
          const float* cos_sin, int threads);

// out[r][i] = silu(gu[r][i]) · gu[r][inter + i]: the SwiGLU gate over a fused
// gate|up projection. out has `inter` floats per row.
void SiluMul(const float* gate_up, size_t rows, size_t inter, float* out, int threads);

// The index of the largest of x[0..n) (the first, on ties); greedy
// sampling over a vocabulary of 150k logits per sequence per step.
size_t ArgMax(const float* x, size_t n);

// A paged KV cache layer: block b, slot s, kv head h starts at
// base + ((b · block_tokens + s) · kv_heads + h) · head_dim, for K and V alike.
struct KvLayer {
  float* k = nullptr;
  float* v = nullptr;
  uint32_t block_tokens = 16;
  int kv_heads = 1;
  int head_dim = 1;
};

// One sequence's queries in a step: rows [row, row + count) of q, at
// positions start, start+1, …; its keys/values for positions
// [0, start + count) are in the blocks of `blocks` (already written).
struct AttentionSeq {
  uint32_t row = 0;
  uint32_t count = 0;
  uint32_t start = 0;
  std::span<const int32_t> blocks;
};

// Grouped-query attention: query head h reads kv head h / (heads /
// kv_heads). out[row] gets heads × head_dim floats (stride ld_out).
// softmax(scale · q·kᵀ)·v per head over positions ≤ the row's own when
// `causal`, else over all of its sequence's [0, start + count) (a
// bidirectional embedder, whose chunks are whole sequences).
void PagedAttention(const float* q, size_t ld_q, float* out, size_t ld_out,
                    std::span<const AttentionSeq> seqs, const KvLayer& kv, int heads, float scale,
                    bool causal, int threads);

}  // namespace shoal::native::cpu
