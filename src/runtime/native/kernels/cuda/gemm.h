// Dense layers on the GPU through cuBLASLt: y = x · Wᵀ + b with bf16 weights
// and inputs, fp32 accumulation, the bias (and a residual, as cuBLASLt's C
// input) added in the GEMM's epilogue, and y in bf16 (hidden states) or fp32
// (a head's logits).
//
// Layout: row-major throughout, as the rest of the backend. cuBLASLt is
// column-major, so a row-major [rows, out] output is computed as its
// column-major transpose: D[out, rows] = op(W)[out, in] · X[in, rows], with
// W ([out][in], PyTorch's nn.Linear layout) read transposed in place.
//
// Threading: a DenseLayer is immutable after Create and may be shared by any
// number of GemmRunners. A GemmRunner belongs to one stream and one thread at
// a time (its cuBLASLt handle, workspace and plan cache are not shared).
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "common/status.h"
#include "runtime/native/kernels/cuda/device_memory.h"

namespace shoal::native::cuda {

enum class OutputType { kBF16, kF32 };

// What the epilogue applies after the bias: nothing, or an activation fused
// into the GEMM (its output is written once, already activated). cuBLASLt's
// GELU is the tanh form; on erf-GELU models it differs from erf by under
// 5e-4 before the bf16 rounding (whose step is 4e-3 at 1), which the
// backend's tests bound against transformers.
enum class Epilogue { kNone, kGelu, kRelu };

class DenseLayer {
 public:
  // w: [out][in] fp32 on the host; bias: [out] or null. Converted to bf16
  // (weights) and to the output type (bias), then copied to the device.
  static Result<std::unique_ptr<DenseLayer>> Create(const float* w, size_t in, size_t out, const float* bias,
                                                    OutputType output);

  size_t in() const { return in_; }
  size_t out() const { return out_; }
  OutputType output() const { return output_; }
  const __nv_bfloat16* weights() const { return weights_.as<__nv_bfloat16>(); }
  const void* bias() const { return bias_.data(); }  // null without a bias
  size_t memory_bytes() const { return weights_.bytes() + bias_.bytes(); }

 private:
  DenseLayer() = default;
  size_t in_ = 0, out_ = 0;
  OutputType output_ = OutputType::kBF16;
  DeviceBuffer weights_;
  DeviceBuffer bias_;
};

class GemmRunner {
 public:
  static Result<std::unique_ptr<GemmRunner>> Create(cudaStream_t stream);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  // y[rows, out] = x[rows, in] · Wᵀ + b (+ residual[rows, out], bf16 output
  // only: the residual connection added in the same pass), queued on the
  // runner's stream. y may not alias x or residual.
  Status Run(const DenseLayer& layer, const __nv_bfloat16* x, size_t rows, void* y,
             const __nv_bfloat16* residual = nullptr);
  // y = act(x · Wᵀ + b): the activation in the epilogue (no residual).
  Status RunActivated(const DenseLayer& layer, const __nv_bfloat16* x, size_t rows, void* y, Epilogue act);

  size_t memory_bytes() const { return workspace_.bytes(); }

 private:
  struct Plan;
  // (out, rows, in, output type, has bias, epilogue): the shape of one matmul.
  using Shape = std::tuple<size_t, size_t, size_t, OutputType, bool, Epilogue>;

  GemmRunner() = default;
  Result<Plan*> PlanFor(const Shape& shape);
  Status Launch(const DenseLayer& layer, const __nv_bfloat16* x, size_t rows, void* y,
                const __nv_bfloat16* residual, Epilogue act);

  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::map<Shape, std::unique_ptr<Plan>> plans_;
};

}  // namespace shoal::native::cuda
