// Internal to shoal_kernels: which vector ISA the kernels run on, and the
// OpenMP thread-count scope every entry point uses.
//
// Threading: the ISA choice is read once (a relaxed atomic, written only by
// tests before they call kernels). OmpThreads changes the OpenMP ICV of the
// calling thread only (libgomp keeps nthreads-var per thread), so concurrent
// callers with different thread budgets do not affect one another.
#pragma once

#include <omp.h>

namespace shoal::native::cpu {

// True when the CPU has AVX-512 F/BW/DQ/VL (and the override allows it).
bool UseAvx512();
// True when the CPU also has AVX512_BF16 (hardware fp32→bf16 rounding).
bool HasAvx512Bf16();

// Tests force the portable path with false; true restores detection.
void SetAvx512AllowedForTesting(bool allowed);

// Sets omp_get_max_threads() for this thread for the scope: oneDNN sizes its
// parallel regions from it, and so do our `num_threads` clauses.
class OmpThreads {
 public:
  explicit OmpThreads(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads < 1 ? 1 : threads);
  }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

// The AVX-512 function attribute for hand-vectorized kernels.
#define SHOAL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

}  // namespace shoal::native::cpu
