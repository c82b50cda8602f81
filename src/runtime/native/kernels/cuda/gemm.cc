#include "runtime/native/kernels/cuda/gemm.h"

#include "runtime/native/kernels/cuda/cuda_status.h"
#include "runtime/native/kernels/cuda/host_bf16.h"

namespace shoal::native::cuda {
namespace {

// cuBLASLt's own guidance for Hopper: 32 MiB lets it pick its fastest
// kernels (split-K, stream-K) at every shape.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
// Batches of every row count each get a plan; past this many the cache is
// dropped and rebuilt from the shapes still in use.
constexpr size_t kMaxPlans = 512;

cublasLtEpilogue_t EpilogueOf(bool bias, Epilogue act) {
  switch (act) {
    case Epilogue::kGelu: return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case Epilogue::kRelu: return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case Epilogue::kNone: break;
  }
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

Result<std::unique_ptr<DenseLayer>> DenseLayer::Create(const float* w, size_t in, size_t out, const float* bias,
                                                       OutputType output) {
  std::unique_ptr<DenseLayer> d(new DenseLayer());
  d->in_ = in;
  d->out_ = out;
  d->output_ = output;
  const std::vector<uint16_t> wb = ToBf16(w, in * out);
  SHOAL_RETURN_IF_ERROR(d->weights_.Upload(wb.data(), wb.size() * sizeof(uint16_t)));
  if (bias != nullptr) {
    if (output == OutputType::kF32) {
      SHOAL_RETURN_IF_ERROR(d->bias_.Upload(bias, out * sizeof(float)));
    } else {
      const std::vector<uint16_t> bb = ToBf16(bias, out);
      SHOAL_RETURN_IF_ERROR(d->bias_.Upload(bb.data(), bb.size() * sizeof(uint16_t)));
    }
  }
  return d;
}

// One matmul's descriptors and the algorithm cuBLASLt's heuristic chose.
struct GemmRunner::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Result<std::unique_ptr<GemmRunner>> GemmRunner::Create(cudaStream_t stream) {
  std::unique_ptr<GemmRunner> r(new GemmRunner());
  r->stream_ = stream;
  SHOAL_CUBLAS_OK(cublasLtCreate(&r->handle_));
  SHOAL_RETURN_IF_ERROR(r->workspace_.Allocate(kWorkspaceBytes));
  return r;
}

GemmRunner::~GemmRunner() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
}

Result<GemmRunner::Plan*> GemmRunner::PlanFor(const Shape& shape) {
  auto it = plans_.find(shape);
  if (it != plans_.end()) return it->second.get();
  if (plans_.size() >= kMaxPlans) plans_.clear();
  const auto [out, rows, in, output, has_bias, act] = shape;
  auto plan = std::make_unique<Plan>();
  SHOAL_CUBLAS_OK(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  SHOAL_CUBLAS_OK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                                 sizeof transpose));
  const cublasLtEpilogue_t epilogue = EpilogueOf(has_bias, act);
  SHOAL_CUBLAS_OK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                 sizeof epilogue));
  const cudaDataType_t out_type = output == OutputType::kF32 ? CUDA_R_32F : CUDA_R_16BF;
  // Column-major views: W as [in, out] (transposed by TRANSA), x as
  // [in, rows], y as [out, rows].
  SHOAL_CUBLAS_OK(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, in, out, in));
  SHOAL_CUBLAS_OK(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, in, rows, in));
  SHOAL_CUBLAS_OK(cublasLtMatrixLayoutCreate(&plan->d, out_type, out, rows, out));

  cublasLtMatmulPreference_t pref = nullptr;
  SHOAL_CUBLAS_OK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t workspace = workspace_.bytes();
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                          &workspace, sizeof workspace);
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d, pref, 1, &result,
                                       &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  SHOAL_CUBLAS_OK(s);
  if (found == 0) {
    return Internal("cuBLASLt: no algorithm for a " + std::to_string(rows) + "x" + std::to_string(in) + " by " +
                    std::to_string(in) + "x" + std::to_string(out) + " bf16 matmul");
  }
  plan->algo = result.algo;
  Plan* p = plan.get();
  plans_.emplace(shape, std::move(plan));
  return p;
}

Status GemmRunner::Run(const DenseLayer& layer, const __nv_bfloat16* x, size_t rows, void* y,
                       const __nv_bfloat16* residual) {
  return Launch(layer, x, rows, y, residual, Epilogue::kNone);
}

Status GemmRunner::RunActivated(const DenseLayer& layer, const __nv_bfloat16* x, size_t rows, void* y,
                                Epilogue act) {
  return Launch(layer, x, rows, y, nullptr, act);
}

Status GemmRunner::Launch(const DenseLayer& layer, const __nv_bfloat16* x, size_t rows, void* y,
                          const __nv_bfloat16* residual, Epilogue act) {
  if (rows == 0) return Status::Ok();
  if (residual != nullptr && layer.output() != OutputType::kBF16) {
    return Internal("GemmRunner: a residual needs a bf16 output");
  }
  const bool has_bias = layer.bias() != nullptr;
  SHOAL_ASSIGN_OR_RETURN(Plan * plan, PlanFor({layer.out(), rows, layer.in(), layer.output(), has_bias, act}));
  if (has_bias) {
    const void* bias = layer.bias();
    SHOAL_CUBLAS_OK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                   sizeof bias));
  }
  // C has D's layout: with beta = 1 it is the residual, with beta = 0 it is
  // not read.
  const float alpha = 1.0f, beta = residual != nullptr ? 1.0f : 0.0f;
  const void* c = residual != nullptr ? static_cast<const void*>(residual) : y;
  SHOAL_CUBLAS_OK(cublasLtMatmul(handle_, plan->desc, &alpha, layer.weights(), plan->a, x, plan->b, &beta, c,
                                 plan->d, y, plan->d, &plan->algo, workspace_.data(), workspace_.bytes(),
                                 stream_));
  return Status::Ok();
}

}  // namespace shoal::native::cuda
