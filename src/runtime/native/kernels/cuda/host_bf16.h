// fp32 → bf16 on the host, for weights on their way to the device: round to
// nearest even, as PyTorch's .to(torch.bfloat16) does; NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace shoal::native::cuda {

inline uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

inline std::vector<uint16_t> ToBf16(const float* x, size_t n) {
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = ToBf16(x[i]);
  return out;
}

}  // namespace shoal::native::cuda
