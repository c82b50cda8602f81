// The weights of one dense layer read from a checkpoint as fp32 on the host:
// one or more nn.Linear tensors ([out][in]) stacked on their output axis, so
// q|k|v (or gate|up) become one GEMM, with their biases where the checkpoint
// has them (for all of them or none). Each backend prepares these for its
// own kernels (cpu::Linear, cuda::DenseLayer).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/loaders/safetensors.h"

namespace shoal::native {

struct StackedLinear {
  std::vector<float> weights;  // [Σ outs][in]
  std::vector<float> bias;     // [Σ outs], or empty without biases
  size_t in = 0, out = 0;
};

// `names` are module names ("encoder.layer.0.attention.self.query"); their
// ".weight" must be [outs[i]][in].
Result<StackedLinear> ReadStackedLinear(const SafeTensors& w, const std::vector<std::string>& names,
                                        const std::vector<size_t>& outs, size_t in);

}  // namespace shoal::native
