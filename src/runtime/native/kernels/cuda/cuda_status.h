// CUDA and cuBLASLt results as Status values: every call into either library
// goes through these, so a failure on the device (out of memory, a bad
// launch, a lost GPU) reaches the caller as INTERNAL with the call and its
// message, never as an exception or a silent wrong answer.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

#include "common/status.h"

namespace shoal::native::cuda {

inline Status FromCuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Internal(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

inline Status FromCublas(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string("cuBLASLt: ") + what + ": " + cublasLtGetStatusString(e));
}

}  // namespace shoal::native::cuda

#define SHOAL_CUDA_OK(call) SHOAL_RETURN_IF_ERROR(::shoal::native::cuda::FromCuda((call), #call))
#define SHOAL_CUBLAS_OK(call) SHOAL_RETURN_IF_ERROR(::shoal::native::cuda::FromCublas((call), #call))
