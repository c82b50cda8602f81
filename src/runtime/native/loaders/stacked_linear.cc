#include "runtime/native/loaders/stacked_linear.h"

#include <cstring>

namespace shoal::native {

Result<StackedLinear> ReadStackedLinear(const SafeTensors& w, const std::vector<std::string>& names,
                                        const std::vector<size_t>& outs, size_t in) {
  StackedLinear s;
  s.in = in;
  for (size_t o : outs) s.out += o;
  s.weights.resize(s.out * in);
  const bool bias = w.Find(names[0] + ".bias") != nullptr;
  if (bias) s.bias.resize(s.out);
  size_t row = 0;
  for (size_t p = 0; p < names.size(); ++p) {
    std::vector<float> ws, bs;
    auto wv = w.F32(names[p] + ".weight", {static_cast<int64_t>(outs[p]), static_cast<int64_t>(in)}, &ws);
    if (!wv.ok()) return wv.status();
    std::memcpy(s.weights.data() + row * in, *wv, outs[p] * in * sizeof(float));
    if (bias) {
      auto bv = w.F32(names[p] + ".bias", {static_cast<int64_t>(outs[p])}, &bs);
      if (!bv.ok()) return bv.status();
      std::memcpy(s.bias.data() + row, *bv, outs[p] * sizeof(float));
    }
    row += outs[p];
  }
  return s;
}

}  // namespace shoal::native
