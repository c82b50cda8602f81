#include "runtime/native/loaders/weight_reader.h"

#include "runtime/native/loaders/stacked_linear.h"

namespace shoal::native {

Result<const float*> WeightReader::Tensor(const std::string& name, std::vector<int64_t> shape) {
  std::vector<float> storage;
  auto v = w_.F32(name, std::move(shape), &storage);
  if (!v.ok()) return v.status();
  if (storage.empty()) return *v;
  converted_->push_back(std::move(storage));
  return static_cast<const float*>(converted_->back().data());
}

Result<std::unique_ptr<cpu::Linear>> WeightReader::Linear(const std::vector<std::string>& names,
                                                          const std::vector<size_t>& outs, size_t in) {
  SHOAL_ASSIGN_OR_RETURN(const StackedLinear s, ReadStackedLinear(w_, names, outs, in));
  return cpu::Linear::Create(s.weights.data(), cpu::WeightLayout::kOutIn, in, s.out,
                             s.bias.empty() ? nullptr : s.bias.data(), precision_);
}

}  // namespace shoal::native
