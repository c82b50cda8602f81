// Attention over packed sequences against a double reference: lengths from 1
// up, odd head widths, q/k/v inside one fused QKV buffer, both ISA paths.
#include <gtest/gtest.h>

#include <numeric>
#include <thread>

#include "reference.h"

namespace shoal::native::cpu {
namespace {

using testing::ForEachIsa;
using testing::RandomVector;

struct Case {
  std::vector<uint32_t> lengths;
  int heads, head_dim;
};

std::vector<uint32_t> Offsets(const std::vector<uint32_t>& lengths) {
  std::vector<uint32_t> off{0};
  for (uint32_t l : lengths) off.push_back(off.back() + l);
  return off;
}

// qkv: [rows, 3·H·D] (q | k | v); returns [rows, H·D].
// window > 0: a row sees only the rows at most `window` away (local attention).
// keys[s] > 0: sequence s's rows from keys[s] on are queries only.
std::vector<double> Reference(const std::vector<float>& qkv, const std::vector<uint32_t>& off,
                              size_t heads, size_t dim, double scale, size_t window = 0,
                              const std::vector<uint32_t>& keys = {}) {
  const size_t hd = heads * dim, ld = 3 * hd;
  std::vector<double> out(off.back() * hd, 0.0);
  for (size_t s = 0; s + 1 < off.size(); ++s) {
    const size_t b = off[s], len = off[s + 1] - off[s];
    const size_t nkeys = keys.empty() || keys[s] == 0 ? len : keys[s];
    for (size_t h = 0; h < heads; ++h) {
      for (size_t i = 0; i < len; ++i) {
        std::vector<double> p(len);
        double mx = -INFINITY;
        for (size_t j = 0; j < len; ++j) {
          double d = 0;
          for (size_t c = 0; c < dim; ++c)
            d += static_cast<double>(qkv[(b + i) * ld + h * dim + c]) *
                 qkv[(b + j) * ld + hd + h * dim + c];
          const bool far = window > 0 && (i > j ? i - j : j - i) > window;
          p[j] = far || j >= nkeys ? -INFINITY : d * scale;
          mx = std::max(mx, p[j]);
        }
        if (mx == -INFINITY) {  // no key in its window: a zero row
          for (size_t c = 0; c < dim; ++c) out[(b + i) * hd + h * dim + c] = 0;
          continue;
        }
        double sum = 0;
        for (auto& v : p) sum += (v = std::exp(v - mx));
        for (size_t c = 0; c < dim; ++c) {
          double acc = 0;
          for (size_t j = 0; j < len; ++j) acc += p[j] * qkv[(b + j) * ld + 2 * hd + h * dim + c];
          out[(b + i) * hd + h * dim + c] = acc / sum;
        }
      }
    }
  }
  return out;
}

std::vector<float> RunAttention(const std::vector<float>& qkv, const std::vector<uint32_t>& off,
                                int heads, int dim, float scale, int threads, size_t window = 0,
                                const std::vector<uint32_t>& keys = {}) {
  const size_t hd = static_cast<size_t>(heads) * dim;
  std::vector<float> out(off.back() * hd, NAN);
  Attention(qkv.data(), qkv.data() + hd, qkv.data() + 2 * hd, 3 * hd, out.data(), off, heads, dim,
            scale, threads, window, keys);
  return out;
}

TEST(Attention, MatchesReference) {
  const Case cases[] = {
      {{1}, 1, 1},     {{1, 1, 1}, 2, 8},         {{5}, 3, 7},        {{1, 16, 17, 3}, 2, 16},
      {{128}, 12, 64}, {{128, 1, 77, 33}, 4, 64}, {{200, 31}, 2, 33}, {{15, 16, 48}, 6, 32},
  };
  ForEachIsa([&](const char* isa) {
    uint32_t seed = 300;
    for (const Case& c : cases) {
      const auto off = Offsets(c.lengths);
      const size_t width = 3ull * c.heads * c.head_dim;
      // Scores up to ~±8 after scaling: a peaked softmax, not a flat one.
      const auto qkv = RandomVector(off.back() * width, seed++, -2.0f, 2.0f);
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
      const auto ref = Reference(qkv, off, c.heads, c.head_dim, scale);
      for (int threads : {1, 2}) {
        const auto out = RunAttention(qkv, off, c.heads, c.head_dim, scale, threads);
        EXPECT_LE(testing::MaxAbsDiff(out, ref), 2e-5f)
            << isa << " seqs=" << c.lengths.size() << " first_len=" << c.lengths[0]
            << " heads=" << c.heads << " dim=" << c.head_dim << " threads=" << threads;
      }
    }
  });
}

// Local attention: windows narrower than some sequences, as wide as others
// (those run unmasked), short and long (both kernel paths).
TEST(Attention, SlidingWindowMatchesReference) {
  const Case cases[] = {{{1, 9, 10, 40}, 2, 16}, {{128, 3}, 4, 32}, {{200}, 2, 24}};
  ForEachIsa([&](const char* isa) {
    uint32_t seed = 400;
    for (const Case& c : cases) {
      const auto off = Offsets(c.lengths);
      const auto qkv = RandomVector(off.back() * 3ull * c.heads * c.head_dim, seed++, -2.0f, 2.0f);
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
      for (size_t window : {size_t{4}, size_t{8}, size_t{64}}) {
        const auto ref = Reference(qkv, off, c.heads, c.head_dim, scale, window);
        for (int threads : {1, 2}) {
          const auto out = RunAttention(qkv, off, c.heads, c.head_dim, scale, threads, window);
          EXPECT_LE(testing::MaxAbsDiff(out, ref), 2e-5f)
              << isa << " first_len=" << c.lengths[0] << " window=" << window << " threads=" << threads;
        }
      }
    }
  });
}

// A key limit (ColBERT's query expansion): the rows past it still query,
// nothing attends to them; on both kernel paths, with and without a window.
TEST(Attention, KeyLimitMatchesReference) {
  const std::vector<uint32_t> lengths{32, 5, 130, 16};
  const std::vector<uint32_t> keys{9, 0, 100, 16};  // 0 and 16: every row a key
  const auto off = Offsets(lengths);
  const int heads = 2, dim = 16;
  const auto qkv = RandomVector(off.back() * 3ull * heads * dim, 500, -2.0f, 2.0f);
  const float scale = 0.25f;
  ForEachIsa([&](const char* isa) {
    for (size_t window : {size_t{0}, size_t{8}}) {
      const auto ref = Reference(qkv, off, heads, dim, scale, window, keys);
      for (int threads : {1, 2}) {
        const auto out = RunAttention(qkv, off, heads, dim, scale, threads, window, keys);
        EXPECT_LE(testing::MaxAbsDiff(out, ref), 2e-5f) << isa << " window=" << window << " threads=" << threads;
      }
    }
  });
}

TEST(Attention, EmptySequenceIsSkipped) {
  const std::vector<uint32_t> off{0, 0, 3, 3};
  const auto qkv = RandomVector(size_t{3} * 3 * 8, 1);
  const auto ref = Reference(qkv, off, 2, 4, 0.5);
  EXPECT_LE(testing::MaxAbsDiff(RunAttention(qkv, off, 2, 4, 0.5f, 2), ref), 2e-5f);
}

TEST(Attention, ConcurrentCallsFromTwoThreads) {
  // Both the loop path (short) and the sgemm path (long), thread budgets 1 and
  // 2 side by side.
  const auto off = Offsets({128, 64, 1, 90, 200});
  const int heads = 12, dim = 64;
  const auto qkv = RandomVector(size_t{off.back()} * 3 * heads * dim, 17);
  const std::vector<float> want[2] = {RunAttention(qkv, off, heads, dim, 0.125f, 1),
                                      RunAttention(qkv, off, heads, dim, 0.125f, 2)};
  int bad[2] = {0, 0};
  auto run = [&](int threads) {
    for (int it = 0; it < 5; ++it) {
      if (RunAttention(qkv, off, heads, dim, 0.125f, threads) != want[threads - 1])
        ++bad[threads - 1];
    }
  };
  std::thread t0(run, 1), t1(run, 2);
  t0.join();
  t1.join();
  EXPECT_EQ(bad[0] + bad[1], 0);
}

}  // namespace
}  // namespace shoal::native::cpu
