// Internal to shoal_kernels: the one oneDNN CPU engine every primitive runs on.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace shoal::native::cpu {

inline dnnl::engine& CpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A matmul primitive is specialized for its row count; rows run in at most
// two pieces — the largest multiple of this, then the rest — so the
// primitives a Linear keeps stay few (linear.cc says why).
inline constexpr size_t kLinearRowChunk = 256;

}  // namespace shoal::native::cpu
