#include "runtime/native/loaders/weight_reader.h"

#include <cstring>

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
  size_t total = 0;
  for (size_t o : outs) total += o;
  std::vector<float> w(total * in), b;
  const bool bias = w_.Find(names[0] + ".bias") != nullptr;
  if (bias) b.resize(total);
  size_t row = 0;
  for (size_t p = 0; p < names.size(); ++p) {
    std::vector<float> ws, bs;
    auto wv = w_.F32(names[p] + ".weight", {static_cast<int64_t>(outs[p]), static_cast<int64_t>(in)}, &ws);
    if (!wv.ok()) return wv.status();
    std::memcpy(w.data() + row * in, *wv, outs[p] * in * sizeof(float));
    if (bias) {
      auto bv = w_.F32(names[p] + ".bias", {static_cast<int64_t>(outs[p])}, &bs);
      if (!bv.ok()) return bv.status();
      std::memcpy(b.data() + row, *bv, outs[p] * sizeof(float));
    }
    row += outs[p];
  }
  return cpu::Linear::Create(w.data(), cpu::WeightLayout::kOutIn, in, total, bias ? b.data() : nullptr, precision_);
}

}  // namespace shoal::native
