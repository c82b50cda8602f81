// Internal to shoal_kernels: Linear at Precision::kInt8 (kernels.h says
// what it computes; linear_int8.cc how).
#pragma once

#include <memory>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"

namespace shoal::native::cpu {

Result<std::unique_ptr<Linear>> CreateInt8Linear(const float* w, WeightLayout layout, size_t in,
                                                 size_t out, const float* bias);

}  // namespace shoal::native::cpu
