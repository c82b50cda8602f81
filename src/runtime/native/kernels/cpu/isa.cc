// Runtime CPU feature detection for the kernels (see isa.h).
#include "runtime/native/kernels/cpu/isa.h"

#include <atomic>

namespace shoal::native::cpu {
namespace {

bool DetectAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

std::atomic<bool> g_allowed{true};

}  // namespace

bool UseAvx512() {
  static const bool detected = DetectAvx512();
  return detected && g_allowed.load(std::memory_order_relaxed);
}

bool HasAvx512Bf16() {
  static const bool detected = UseAvx512() && __builtin_cpu_supports("avx512bf16");
  return detected && g_allowed.load(std::memory_order_relaxed);
}

void SetAvx512AllowedForTesting(bool allowed) {
  g_allowed.store(allowed, std::memory_order_relaxed);
}

}  // namespace shoal::native::cpu
