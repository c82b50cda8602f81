// FewRowsGemm: y = x · W (+ b) for 2 to kFewRows rows of x, W plain
// row-major [in][out] f32 — the decode steps of a small batch of a
// generator (a token per sequence, or a sequence's last token and its
// drafts when it speculates). One row stays with oneDNN's GEMV (linear.cc),
// which streams W faster still.
//
// Why: a step over few rows only streams the weights once; its cost is
// memory, not arithmetic. oneDNN's gemm:jit (what AVX2 CPUs get, with W
// plain) took about twice as long for 2 to 8 rows as for one (a step of a
// 12-layer 512-wide model on 2 cores: 21–24 ms against 11.5), so a batch of
// 2 cost nearly what two batches of 1 do and a speculative step was no
// cheaper than the tokens it checked. This kernel walks W in panels of
// kPanelRows rows (that many sequential streams, which the prefetchers
// follow), a tile of columns at a time, and keeps every row's partial sums
// for a column block in registers: each W element is loaded once per call,
// whatever the row count. The same step: 14–17 ms for 2–4 rows, 20–23 for
// 5–8 (docs/native-runtime.md).
//
// Numerics: y[r][n] is the sum over k in order, one fused multiply-add at a
// time, the same for every row count: a row's result does not depend on
// which other rows share the call.
//
// AVX2 + FMA; Available() says whether this CPU has them.
#pragma once

#include <cstddef>

namespace shoal::native::cpu {

inline constexpr size_t kFewRows = 8;

// Whether FewRowsGemm can run here (AVX2 and FMA).
bool FewRowsGemmAvailable();

// 1 ≤ `rows` ≤ kFewRows, `out` a multiple of 8; `bias` may be null. Splits the
// columns over `threads` threads.
void FewRowsGemm(const float* x, size_t rows, size_t in, const float* w, size_t out, const float* bias, float* y,
                 int threads);

}  // namespace shoal::native::cpu
