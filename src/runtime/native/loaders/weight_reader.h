// WeightReader: a model's tensors as f32 and its dense layers as prepared
// cpu::Linear, from a SafeTensors checkpoint — what every native model's
// loader does with its weights.
//
// f32 tensors are used in place (views into the mapping); f16/bf16 ones are
// converted into copies kept in `converted`, which the model owns so the
// pointers stay valid as long as it lives.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/safetensors.h"

namespace shoal::native {

class WeightReader {
 public:
  WeightReader(const SafeTensors& weights, std::vector<std::vector<float>>* converted, cpu::Precision precision)
      : w_(weights), converted_(converted), precision_(precision) {}

  // The tensor `name`, which must have `shape`.
  Result<const float*> Tensor(const std::string& name, std::vector<int64_t> shape);

  // One Linear from the nn.Linear weights ([out][in]) `names`, stacked on
  // their output axis (one GEMM for q|k|v, or gate|up), with their biases
  // where the checkpoint has them (for all of them or none).
  Result<std::unique_ptr<cpu::Linear>> Linear(const std::vector<std::string>& names,
                                              const std::vector<size_t>& outs, size_t in);

 private:
  const SafeTensors& w_;
  std::vector<std::vector<float>>* converted_;
  cpu::Precision precision_;
};

}  // namespace shoal::native
