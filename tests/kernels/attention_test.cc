// Attention over packed sequences against a double reference: lengths from 1
// up, odd head widths, q/k/v inside one fused QKV buffer, both ISA paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
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
// bias(h, j − i) (or empty): added to head h's scaled scores.
// causal: a row sees only itself and the rows before it.
using BiasOf = std::function<double(size_t, ptrdiff_t)>;
std::vector<double> Reference(const std::vector<float>& qkv, const std::vector<uint32_t>& off,
                              size_t heads, size_t dim, double scale, size_t window = 0,
                              const std::vector<uint32_t>& keys = {}, const BiasOf& bias_of = {},
                              bool causal = false) {
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
          const bool far = (window > 0 && (i > j ? i - j : j - i) > window) || (causal && j > i);
          const double bias = bias_of ? bias_of(h, static_cast<ptrdiff_t>(j) - static_cast<ptrdiff_t>(i)) : 0.0;
          p[j] = far || j >= nkeys ? -INFINITY : d * scale + bias;
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

// Causal attention (CLIP's text tower): every length, both kernel paths.
TEST(Attention, CausalMatchesReference) {
  const Case cases[] = {{{1, 2, 9, 40}, 2, 16}, {{77, 3}, 4, 32}, {{200}, 2, 24}};
  ForEachIsa([&](const char* isa) {
    uint32_t seed = 450;
    for (const Case& c : cases) {
      const auto off = Offsets(c.lengths);
      const size_t hd = static_cast<size_t>(c.heads) * c.head_dim;
      const auto qkv = RandomVector(off.back() * 3 * hd, seed++, -2.0f, 2.0f);
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
      const auto ref = Reference(qkv, off, c.heads, c.head_dim, scale, 0, {}, {}, /*causal=*/true);
      for (int threads : {1, 2}) {
        std::vector<float> out(off.back() * hd, NAN);
        Attention(qkv.data(), qkv.data() + hd, qkv.data() + 2 * hd, 3 * hd, out.data(), off, c.heads, c.head_dim,
                  scale, threads, 0, {}, nullptr, /*causal=*/true);
        EXPECT_LE(testing::MaxAbsDiff(out, ref), 2e-5f)
            << isa << " first_len=" << c.lengths[0] << " threads=" << threads;
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

// DeBERTa's disentangled attention: two relative-position terms in every
// score, each from its own table (pos_q, pos_k: [rows, H·D], ld_pos apart),
// read at rows[i − j + max_len − 1]; here a clamped, bucket-like mapping
// (distances over 5 share rows) so lengths past it exercise the sharing.
std::vector<double> DisentangledReference(const std::vector<float>& qkv, const std::vector<uint32_t>& off,
                                          size_t heads, size_t dim, double scale, const float* pos_q,
                                          const float* pos_k, size_t ld_pos, const std::vector<int32_t>& rows,
                                          const std::vector<uint32_t>& keys = {}) {
  const size_t hd = heads * dim, ld = 3 * hd, max_len = (rows.size() + 1) / 2;
  std::vector<double> out(off.back() * hd, 0.0);
  auto dot = [&](const float* a, const float* b) {
    double d = 0;
    for (size_t c = 0; c < dim; ++c) d += static_cast<double>(a[c]) * b[c];
    return d;
  };
  for (size_t s = 0; s + 1 < off.size(); ++s) {
    const size_t b = off[s], len = off[s + 1] - off[s];
    const size_t nkeys = keys.empty() || keys[s] == 0 ? len : keys[s];
    for (size_t h = 0; h < heads; ++h) {
      for (size_t i = 0; i < len; ++i) {
        const float* q = &qkv[(b + i) * ld + h * dim];
        std::vector<double> p(nkeys);
        double mx = -INFINITY;
        for (size_t j = 0; j < nkeys; ++j) {
          const float* k = &qkv[(b + j) * ld + hd + h * dim];
          const size_t r = rows[i + max_len - 1 - j];
          double sc = dot(q, k);
          if (pos_k) sc += dot(q, pos_k + r * ld_pos + h * dim);
          if (pos_q) sc += dot(k, pos_q + r * ld_pos + h * dim);
          p[j] = sc * scale;
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (auto& v : p) sum += (v = std::exp(v - mx));
        for (size_t c = 0; c < dim; ++c) {
          double acc = 0;
          for (size_t j = 0; j < nkeys; ++j) acc += p[j] * qkv[(b + j) * ld + 2 * hd + h * dim + c];
          out[(b + i) * hd + h * dim + c] = acc / sum;
        }
      }
    }
  }
  return out;
}

TEST(Attention, DisentangledMatchesReference) {
  const std::vector<uint32_t> lengths{1, 7, 40, 130};
  const auto off = Offsets(lengths);
  const int heads = 3, dim = 16;
  const size_t hd = heads * dim, max_len = 130, span = 8;
  const auto qkv = RandomVector(off.back() * 3ull * hd, 700, -1.5f, 1.5f);
  // One table holding pos_q | pos_k, as DebertaV2 keeps them: rows 2·span.
  const auto pos = RandomVector(2 * span * 2 * hd, 701, -1.5f, 1.5f);
  std::vector<int32_t> rows(2 * max_len - 1);
  for (int64_t r = -static_cast<int64_t>(max_len - 1); r < static_cast<int64_t>(max_len); ++r) {
    const int64_t bucket = r > 5 ? 5 + (r - 5) / 8 : r < -5 ? -5 - (-r - 5) / 8 : r;
    rows[r + max_len - 1] = static_cast<int32_t>(std::clamp<int64_t>(bucket + span, 0, 2 * span - 1));
  }
  const float scale = 1.0f / std::sqrt(3.0f * dim);
  ForEachIsa([&](const char* isa) {
    for (int terms = 0; terms < 3; ++terms) {  // both, c2p only, p2c only
      const float* pos_q = terms == 1 ? nullptr : pos.data();
      const float* pos_k = terms == 2 ? nullptr : pos.data() + hd;
      const auto ref = DisentangledReference(qkv, off, heads, dim, scale, pos_q, pos_k, 2 * hd, rows);
      for (int threads : {1, 2}) {
        std::vector<float> out(off.back() * hd, NAN);
        DisentangledAttention(qkv.data(), qkv.data() + hd, qkv.data() + 2 * hd, 3 * hd, out.data(), off, heads, dim,
                              scale, pos_q, pos_k, 2 * hd, rows, threads);
        EXPECT_LE(testing::MaxAbsDiff(out, ref), 2e-5f) << isa << " terms=" << terms << " threads=" << threads;
      }
      // A key limit (ColBERT's query expansion), as Attention takes it.
      const std::vector<uint32_t> keys{0, 3, 25, 100};
      const auto limited = DisentangledReference(qkv, off, heads, dim, scale, pos_q, pos_k, 2 * hd, rows, keys);
      std::vector<float> out(off.back() * hd, NAN);
      DisentangledAttention(qkv.data(), qkv.data() + hd, qkv.data() + 2 * hd, 3 * hd, out.data(), off, heads, dim,
                            scale, pos_q, pos_k, 2 * hd, rows, 2, keys);
      EXPECT_LE(testing::MaxAbsDiff(out, limited), 2e-5f) << isa << " terms=" << terms << " with key limits";
    }
  });
}

// A relative-position bias: ALiBi (jina-embeddings-v2's symmetric form)
// and an arbitrary table, different for keys before and after the query
// (MPNet's buckets are), each on short and long sequences, with and without
// a key limit.
TEST(Attention, RelativeBiasMatchesReference) {
  const std::vector<uint32_t> lengths{1, 9, 150, 40};
  const auto off = Offsets(lengths);
  const int heads = 4, dim = 16;
  const size_t max_len = 160, span = 2 * max_len - 1;
  const std::vector<float> slopes{0.5f, 0.25f, 0.125f, 0.0625f};
  std::vector<float> alibi_table(heads * span);
  for (int h = 0; h < heads; ++h) {
    for (size_t i = 0; i < span; ++i) {
      alibi_table[h * span + i] = -(slopes[h] * static_cast<float>(i > max_len - 1 ? i - (max_len - 1) : max_len - 1 - i));
    }
  }
  const RelativeBias alibi{.table = alibi_table, .max_len = max_len};
  const RelativeBias table{.table = RandomVector(heads * span, 801, -2.0f, 2.0f), .max_len = max_len};
  const BiasOf alibi_of = [&](size_t h, ptrdiff_t d) { return -static_cast<double>(slopes[h]) * std::abs(d); };
  const BiasOf table_of = [&](size_t h, ptrdiff_t d) {
    return static_cast<double>(table.table[h * span + (max_len - 1) + d]);
  };
  const auto qkv = RandomVector(off.back() * 3ull * heads * dim, 800, -1.5f, 1.5f);
  const std::vector<uint32_t> keys{0, 5, 0, 40};
  ForEachIsa([&](const char* isa) {
    for (const auto& [bias, bias_of] : {std::pair{&alibi, alibi_of}, std::pair{&table, table_of}}) {
      for (const auto& k : {std::vector<uint32_t>{}, keys}) {
        const auto ref = Reference(qkv, off, heads, dim, 0.25, 0, k, bias_of);
        for (int threads : {1, 2}) {
          std::vector<float> out(off.back() * heads * dim, NAN);
          Attention(qkv.data(), qkv.data() + heads * dim, qkv.data() + 2 * heads * dim, 3 * heads * dim,
                    out.data(), off, heads, dim, 0.25f, threads, 0, k, bias);
          EXPECT_LE(testing::MaxAbsDiff(out, ref), 2e-5f)
              << isa << (bias == &alibi ? " alibi" : " table") << " keys=" << k.size() << " threads=" << threads;
        }
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
