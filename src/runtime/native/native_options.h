// The `native:` section of a model profile, parsed and checked.
#pragma once

#include <optional>

#include "common/model_spec.h"
#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/hf_config.h"

namespace shoal::native {

struct NativeOptions {
  cpu::Precision precision = cpu::Precision::kF32;
  std::optional<Pooling> pooling;  // else the model directory's files
};

Result<NativeOptions> ParseNativeOptions(const ModelSpec& spec);

}  // namespace shoal::native
