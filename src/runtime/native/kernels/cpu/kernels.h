// CPU kernels of the native runtime: the handful of operations an encoder
// forward pass is made of, over activations packed token by token with no
// padding ([tokens, width] row-major, sequences given by offsets).
//
// Threading: every call takes `threads`, the number of cores the calling
// executor owns, and never uses more; calls from different executors may run
// at once (kernels keep no shared mutable state beyond Linear's internally
// locked primitive cache). Weights are immutable after load and may be shared
// by any number of callers. Parallel work runs on OpenMP (libgomp), the
// runtime oneDNN is built on: each calling thread gets its own team of
// `threads` − 1 helpers, sized per call (the caller's OpenMP thread-count
// setting is restored on return). Helpers spin briefly after a region, then
// sleep (libgomp's default), so back-to-back kernels do not pay a wake-up.
// Use one calling thread per executor; start no second pool that spins on the
// same cores.
//
// GEMM backend: oneDNN's matmul primitive (see linear.cc for the figures that
// chose it). Each kernel has an AVX-512 path and a portable one, picked at
// run time, so the library runs on any x86-64 CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"

namespace shoal::native::cpu {

enum class Precision { kF32, kBF16, kInt8 };
enum class Activation { kNone, kGelu /* erf */, kGeluTanh, kRelu, kTanh };

// How a weight matrix is laid out where it comes from.
enum class WeightLayout {
  kOutIn,  // [out][in]: PyTorch nn.Linear, safetensors
  kInOut,  // [in][out]: TensorFlow, TF.js
};

// A dense layer y = act(x · W + b), weights prepared once at load time in the
// layout and precision the GEMM backend runs fastest.
//
// kBF16: weights are stored in bf16 and x is rounded to bf16 per call;
// products accumulate in fp32 and y is fp32. Each output is within
// 1.13 · 2⁻⁸ · Σₖ|xₖ·wₖ| of the exact value (≈ 0.6 % of max|y| on random
// data, tested); about 2× the fp32 throughput on AVX512_BF16 CPUs.
//
// kInt8: weights are stored in int8 with one scale per output channel
// (max|w|/127), x is quantized per call with one scale per row (max|x|/127);
// products accumulate exactly in int32, then y = acc · s_x · s_w + b. Each
// output is within Σₖ(|xₖ|·s_w + |wₖ|·s_x + s_x·s_w/2)/2 of the exact value
// before the activation (tested); 4× the fp32 throughput on VNNI CPUs, and a
// quarter of the bytes to stream at one row.
class Linear {
 public:
  // Copies (and for kBF16/kInt8 converts) the weights; `bias` may be null.
  // kInt8 refuses weights that are not finite.
  static Result<std::unique_ptr<Linear>> Create(const float* w, WeightLayout layout, size_t in,
                                                size_t out, const float* bias, Precision precision);
  virtual ~Linear() = default;

  // x: [rows, in] (row stride in), y: [rows, out] (row stride out); x and y
  // must not overlap. Never throws; if the backend fails after a successful
  // Create (out of memory), y is filled with NaN and the error is logged.
  virtual void Forward(const float* x, size_t rows, float* y, Activation act,
                       int threads) const = 0;

  virtual size_t in() const = 0;
  virtual size_t out() const = 0;
  virtual size_t memory_bytes() const = 0;
};

// x[r] = LN(x[r] + residual[r]) * gamma + beta over `cols`; residual may be
// null, and beta (a LayerNorm without bias). Biased variance, as PyTorch
// and TF compute it.
void LayerNorm(float* x, const float* residual, size_t rows, size_t cols, const float* gamma,
               const float* beta, float eps, int threads);

// A pre-norm block's step: x[r] += delta[r] (delta may be null), then
// out[r] = LN(x[r]) * gamma + beta (beta may be null); out must not overlap x.
void ResidualLayerNorm(float* x, const float* delta, float* out, size_t rows, size_t cols, const float* gamma,
                       const float* beta, float eps, int threads);

// A bias on each score by how far the key is from the query, one table per
// head: score(i, j) += table[h·(2·max_len − 1) + (max_len − 1) + (j − i)],
// for sequences of at most max_len rows (the caller's limit: a longer one
// would read past the table). ALiBi's −slope·|j − i| (JinaBERT) and
// MPNet's bucketed bias are both one.
struct RelativeBias {
  std::vector<float> table;  // [heads][2·max_len − 1]
  size_t max_len = 0;
  // Head h's entry for distance 0.
  const float* at(size_t h) const { return table.data() + h * (2 * max_len - 1) + (max_len - 1); }
};

// Multi-head self-attention over packed variable-length sequences: sequence s
// is rows [offsets[s], offsets[s+1]). q, k and v point at rows with stride
// `ld` (typically one fused QKV buffer); head h reads columns
// [h*head_dim, (h+1)*head_dim) of each. out: [rows, heads*head_dim], stride
// heads*head_dim. softmax(scale · q·kᵀ)·v per head, no mask: a sequence only
// sees its own rows, so no padding is ever computed. window > 0: local
// (sliding-window) attention, a row sees the rows at most `window` away.
// keys (one per sequence, or empty): sequence s's first keys[s] rows alone
// are keys and values (0: all of them); every row is still a query —
// ColBERT's query expansion, whose [MASK] rows nothing attends to.
// bias (optional): a relative-position bias on every score after the scale.
// causal: row i sees rows 0..i of its sequence alone (CLIP's text tower).
void Attention(const float* q, const float* k, const float* v, size_t ld, float* out,
               std::span<const uint32_t> offsets, int heads, int head_dim, float scale,
               int threads, size_t window = 0, std::span<const uint32_t> keys = {},
               const RelativeBias* bias = nullptr, bool causal = false);

// DeBERTa-v2/v3's disentangled self-attention: as Attention (no window),
// with two more terms in each score,
//   s_ij = scale · (q_i·k_j + q_i·pos_k[row(i−j)] + k_j·pos_q[row(i−j)]),
// pos_q and pos_k being the relative-position embeddings through the
// layer's query and key projections (rows `ld_pos` apart, head h at columns
// h·head_dim; either null: no such term). rows: 2·max_len − 1 entries, the
// embedding row distance r = i − j reads at rows[r + max_len − 1], for
// every |r| < max_len, the longest sequence's length or more; monotonic in r.
// keys: as Attention's.
void DisentangledAttention(const float* q, const float* k, const float* v, size_t ld, float* out,
                           std::span<const uint32_t> offsets, int heads, int head_dim, float scale,
                           const float* pos_q, const float* pos_k, size_t ld_pos, std::span<const int32_t> rows,
                           int threads, std::span<const uint32_t> keys = {});

// A block of rows under one rank-`rank` update (LoRA): y[r, 0:out) +=
// (x[r]·Aᵀ)·Btᵀ, with A given transposed, At [in][rank], and Bt [rank][out]
// (B transposed, any scaling already in it); x rows `in` apart, y rows `ldy`
// apart. fp32 throughout.
struct LowRankBlock {
  const float* x = nullptr;
  float* y = nullptr;
  size_t rows = 0, in = 0, out = 0, ldy = 0;
  const float* at = nullptr;
  const float* bt = nullptr;
  size_t rank = 0;
};

// Every block's rows in one parallel region (one fork/join for a whole
// mixed batch, not one per adapter: on a loaded machine each join can cost
// a time slice). INVALID_INPUT, nothing done, for a rank over 256.
Status LowRankUpdate(std::span<const LowRankBlock> blocks, int threads);

// Elementwise, in place, on the calling thread.
void Activate(float* x, size_t n, Activation act);
// The same over `threads` cores (large arrays: an unfused activation).
void Activate(float* x, size_t n, Activation act, int threads);

// out[r][i] = gelu(x[r][i]) · x[r][inter + i] (erf GELU): the GeGLU gate over
// a fused input|gate projection. out has `inter` floats per row.
void GeluMul(const float* x, size_t rows, size_t inter, float* out, int threads);

// out[s] = mean of rows [offsets[s], offsets[s+1]) of x ([rows, cols]); zeros
// for an empty sequence. On the calling thread.
void MeanPool(const float* x, size_t cols, std::span<const uint32_t> offsets, float* out);

// v /= max(‖v‖₂, eps).
void L2Normalize(float* v, size_t n, float eps = 1e-12f);

// bf16/f16 → f32 for loaders.
void Bf16ToF32(const uint16_t* in, float* out, size_t n);
void F16ToF32(const uint16_t* in, float* out, size_t n);

}  // namespace shoal::native::cpu
