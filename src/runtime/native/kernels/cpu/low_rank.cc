// LowRankUpdate (kernels.h): y += (x·Aᵀ)·Btᵀ row by row, for LoRA adapters.
//
// Why not Linear: an adapter's A and B are thin ([16 × 768]), a batch can
// touch a hundred adapters' worth of them, and every Linear holds oneDNN
// primitives per row count (0.1–1 ms each to create, and oneDNN's cache of
// 1024 thrashes past ten adapters × 144 layers). The arithmetic is a few
// percent of the base GEMMs', so two plain passes over blocks of rows do:
// the rank-r vector of each row built in registers by one broadcast-FMA per
// input element against A transposed (At [in][r]: r ≤ 64 lanes, no horizontal
// sums), then multiplied into the outputs 16 columns at a time, each load of
// At and Bt serving up to 8 rows.
#include <algorithm>
#include <utility>
#include <vector>

#include "runtime/native/kernels/cpu/isa.h"
#include "runtime/native/kernels/cpu/kernels.h"

#include <immintrin.h>

namespace shoal::native::cpu {
namespace {

constexpr size_t kMaxRank = 256;
constexpr size_t kRowBlock = 8;  // rows sharing each load of At and Bt

// R rows (≤ 8) with rank ≤ 16·C (C ≤ 4): the low-rank vector of each row
// lives in C registers, built by one broadcast-FMA per input element (no
// horizontal sums), then multiplied into the outputs 16 columns at a time.
// R and C are template constants so the R×C accumulators stay in registers.
template <int R, int C>
SHOAL_AVX512 void BlockAvx512(const LowRankBlock& b, size_t first) {
  const __mmask16 last = static_cast<__mmask16>(b.rank % 16 == 0 ? 0xffff : (1u << (b.rank % 16)) - 1);
  __m512 low[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) low[r][c] = _mm512_setzero_ps();
  }
  const float* x = b.x + first * b.in;
  for (size_t i = 0; i < b.in; ++i) {
    const float* at = b.at + i * b.rank;
    __m512 w[C];
    for (int c = 0; c < C; ++c) w[c] = _mm512_maskz_loadu_ps(c + 1 == C ? last : static_cast<__mmask16>(0xffff), at + c * 16);
    for (int r = 0; r < R; ++r) {
      const __m512 xi = _mm512_set1_ps(x[r * b.in + i]);
      for (int c = 0; c < C; ++c) low[r][c] = _mm512_fmadd_ps(xi, w[c], low[r][c]);
    }
  }
  alignas(64) float lows[R][16 * C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) _mm512_store_ps(lows[r] + c * 16, low[r][c]);
  }
  for (size_t o = 0; o < b.out; o += 16) {
    const __mmask16 m =
        b.out - o >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (b.out - o)) - 1);
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_maskz_loadu_ps(m, b.y + (first + r) * b.ldy + o);
    for (size_t k = 0; k < b.rank; ++k) {
      const __m512 w = _mm512_maskz_loadu_ps(m, b.bt + k * b.out + o);
      for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(lows[r][k]), w, acc[r]);
    }
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(b.y + (first + r) * b.ldy + o, m, acc[r]);
  }
}

template <int R>
void BlockAvx512Rank(const LowRankBlock& b, size_t first) {
  switch ((b.rank + 15) / 16) {
    case 1: return BlockAvx512<R, 1>(b, first);
    case 2: return BlockAvx512<R, 2>(b, first);
    case 3: return BlockAvx512<R, 3>(b, first);
    default: return BlockAvx512<R, 4>(b, first);
  }
}

// Rows [first, first + rows), rows ≤ 8: blocks of 8 keep 8 accumulator
// chains in flight (FMA latency), except at ranks over 32 where 8 × C
// accumulators would not fit in the 32 registers: blocks of 4 then.
void BlockAvx512(const LowRankBlock& b, size_t first, size_t rows) {
  if (b.rank > 32 && rows > 4) {
    BlockAvx512Rank<4>(b, first);
    return BlockAvx512(b, first + 4, rows - 4);
  }
  switch (rows) {
    case 1: return BlockAvx512Rank<1>(b, first);
    case 2: return BlockAvx512Rank<2>(b, first);
    case 3: return BlockAvx512Rank<3>(b, first);
    case 4: return BlockAvx512Rank<4>(b, first);
    case 5: return BlockAvx512Rank<5>(b, first);
    case 6: return BlockAvx512Rank<6>(b, first);
    case 7: return BlockAvx512Rank<7>(b, first);
    default: return BlockAvx512Rank<8>(b, first);
  }
}

// Any rank, one row, in plain C++ (the compiler vectorizes the inner loops).
void RowPortable(const LowRankBlock& b, size_t row) {
  float low[kMaxRank] = {};
  const float* x = b.x + row * b.in;
  for (size_t i = 0; i < b.in; ++i) {
    const float* at = b.at + i * b.rank;
    for (size_t k = 0; k < b.rank; ++k) low[k] += x[i] * at[k];
  }
  float* y = b.y + row * b.ldy;
  for (size_t k = 0; k < b.rank; ++k) {
    const float* bt = b.bt + k * b.out;
    for (size_t o = 0; o < b.out; ++o) y[o] += low[k] * bt[o];
  }
}

}  // namespace

Status LowRankUpdate(std::span<const LowRankBlock> blocks, int threads) {
  // Work units of up to kRowBlock rows of one block, so one loop covers all.
  std::vector<std::pair<uint32_t, uint32_t>> units;  // (block, first row)
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].rank == 0 || blocks[b].rank > kMaxRank) return InvalidInput("LowRankUpdate: rank must be 1 to 256");
    for (size_t r = 0; r < blocks[b].rows; r += kRowBlock) {
      units.emplace_back(static_cast<uint32_t>(b), static_cast<uint32_t>(r));
    }
  }
  const bool avx512 = UseAvx512();
  // A thread's share should be worth its fork: at least 2 units (16 rows).
  const int teams = static_cast<int>(std::min<size_t>(std::max(threads, 1), std::max<size_t>(units.size() / 2, 1)));
#pragma omp parallel for num_threads(teams) schedule(static) if (teams > 1)
  for (size_t u = 0; u < units.size(); ++u) {
    const LowRankBlock& b = blocks[units[u].first];
    const size_t first = units[u].second, rows = std::min(kRowBlock, b.rows - first);
    if (avx512 && b.rank <= 64) {
      BlockAvx512(b, first, rows);
    } else {
      for (size_t r = first; r < first + rows; ++r) RowPortable(b, r);
    }
  }
  return Status::Ok();
}

}  // namespace shoal::native::cpu
