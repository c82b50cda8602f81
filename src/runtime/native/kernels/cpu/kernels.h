// CPU kernels of the native runtime: the handful of operations an encoder
// forward pass is made of, over activations packed token by token with no
// padding ([tokens, width] row-major, sequences given by offsets).
//
// Threading: every call takes `threads`, the number of cores the calling
// executor owns, and never uses more; calls from different executors may run
// at once (kernels keep no shared mutable state). Weights are immutable after
// load and may be shared by any number of callers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "common/status.h"

namespace shoal::native::cpu {

enum class Precision { kF32, kBF16 };
enum class Activation { kNone, kGelu /* erf */, kGeluTanh, kRelu, kTanh };

// How a weight matrix is laid out where it comes from.
enum class WeightLayout {
  kOutIn,  // [out][in]: PyTorch nn.Linear, safetensors
  kInOut,  // [in][out]: TensorFlow, TF.js
};

// A dense layer y = act(x · W + b), weights prepared once at load time in the
// layout and precision the GEMM backend runs fastest.
class Linear {
 public:
  // Copies (and for kBF16 converts) the weights; `bias` may be null.
  static Result<std::unique_ptr<Linear>> Create(const float* w, WeightLayout layout, size_t in,
                                                size_t out, const float* bias, Precision precision);
  virtual ~Linear() = default;

  // x: [rows, in] (row stride in), y: [rows, out] (row stride out).
  virtual void Forward(const float* x, size_t rows, float* y, Activation act,
                       int threads) const = 0;

  virtual size_t in() const = 0;
  virtual size_t out() const = 0;
  virtual size_t memory_bytes() const = 0;
};

// x[r] = LN(x[r] + residual[r]) * gamma + beta over `cols`; residual may be
// null. Biased variance, as PyTorch and TF compute it.
void LayerNorm(float* x, const float* residual, size_t rows, size_t cols, const float* gamma,
               const float* beta, float eps, int threads);

// Multi-head self-attention over packed variable-length sequences: sequence s
// is rows [offsets[s], offsets[s+1]). q, k and v point at rows with stride
// `ld` (typically one fused QKV buffer); head h reads columns
// [h*head_dim, (h+1)*head_dim) of each. out: [rows, heads*head_dim], stride
// heads*head_dim. softmax(scale · q·kᵀ)·v per head, no mask: a sequence only
// sees its own rows, so no padding is ever computed.
void Attention(const float* q, const float* k, const float* v, size_t ld, float* out,
               std::span<const uint32_t> offsets, int heads, int head_dim, float scale,
               int threads);

// Elementwise, in place.
void Activate(float* x, size_t n, Activation act);

// out[s] = mean of rows [offsets[s], offsets[s+1]) of x ([rows, cols]).
void MeanPool(const float* x, size_t cols, std::span<const uint32_t> offsets, float* out);

// v /= max(‖v‖₂, eps).
void L2Normalize(float* v, size_t n, float eps = 1e-12f);

// bf16/f16 → f32 for loaders.
void Bf16ToF32(const uint16_t* in, float* out, size_t n);
void F16ToF32(const uint16_t* in, float* out, size_t n);

}  // namespace shoal::native::cpu
