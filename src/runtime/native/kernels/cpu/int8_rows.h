// Internal to shoal_kernels: the two per-row passes around an int8 GEMM —
// activations quantized with one symmetric scale per row (dynamic, per
// token), and the f32 result scaled back with bias and activation fused.
//
// Threading: both split rows over at most `threads` OpenMP threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/native/kernels/cpu/kernels.h"

namespace shoal::native::cpu {

// q[r][c] = round(x[r][c] / scale[r]), scale[r] = max_c |x[r][c]| / 127, so
// every row uses the full [-127, 127]. An all-zero row has scale 0 (q = 0);
// a row with Inf or NaN has scale NaN, so its outputs come out NaN.
void QuantizeRowsS8(const float* x, size_t rows, size_t cols, int8_t* q, float* scale, int threads);

// y[r][c] = act(y[r][c] · scale[r] + bias[c]); bias may be null.
void DequantizeRows(float* y, size_t rows, size_t cols, const float* scale, const float* bias,
                    Activation act, int threads);

}  // namespace shoal::native::cpu
