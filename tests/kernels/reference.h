// Naive double-precision references and seeded data for the kernel tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "runtime/native/kernels/cpu/isa.h"
#include "runtime/native/kernels/cpu/kernels.h"

namespace shoal::native::cpu::testing {

inline std::vector<float> RandomVector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline double ActivateRef(double x, Activation act) {
  switch (act) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kGelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::kGeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

inline const char* ActivationName(Activation act) {
  switch (act) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kTanh:
      return "tanh";
    case Activation::kGelu:
      return "gelu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
  }
  return "?";
}

inline float MaxAbsDiff(std::span<const float> a, std::span<const double> b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return static_cast<float>(m);
}

// Runs a test body on the AVX-512 path (where the CPU has it) and on the
// portable path, restoring detection afterwards.
template <class F>
void ForEachIsa(F&& body) {
  const bool has = UseAvx512();
  if (has) body("avx512");
  SetAvx512AllowedForTesting(false);
  body("portable");
  SetAvx512AllowedForTesting(true);
}

}  // namespace shoal::native::cpu::testing
