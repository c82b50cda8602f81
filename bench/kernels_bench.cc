// GEMM backends and CPU kernels on the encoder's real shapes (Google Benchmark).
//
// Rows are tokens in a batch at sequence length 128 (batch 1 / 8 / 32 →
// 128 / 1024 / 4096); (in, out) are the four Linear layers of MiniLM-L6
// (hidden 384) and BERT-base (hidden 768). Each backend runs on 1 and 2
// threads; the counter GFLOP/s is 2·rows·in·out per second. Ceiling/* run a
// 1024³ GEMM: the machine's GEMM ceiling (SGEMM; and bf16 for reference).
//
// Figures that decided the backend (oneDNN matmul, blocked weights; 1 / 2
// threads, median GFLOP/s over the 24 shapes: fp32 108 / 216 vs OpenBLAS
// 99 / 198; bf16 218 / 437; 1024³ SGEMM ceiling 102 / 178) are tabulated at the
// top of src/runtime/native/kernels/cpu/linear.cc. The 2 cores here are shared:
// wall-clock figures are only meaningful from runs made while both cores are
// idle (check with a 2-thread spin loop before and after), so run a few
// filters at a time. Run OpenBLAS and oneDNN in separate processes
// (--benchmark_filter) when in doubt: OpenBLAS's pthread pool spins after each
// call and can steal a core from oneDNN's OpenMP team.
//
// Threading: every benchmark sets its own thread count (omp_set_num_threads
// for oneDNN, openblas_set_num_threads for OpenBLAS) before its setup.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

#include "runtime/native/kernels/cpu/few_rows_gemm.h"
#include "runtime/native/kernels/cpu/kernels.h"

namespace {

namespace cpu = shoal::native::cpu;
using dnnl::memory;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

std::vector<uint16_t> ToBf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &v[i], 4);
    b += 0x7fffu + ((b >> 16) & 1u);
    out[i] = static_cast<uint16_t>(b >> 16);
  }
  return out;
}

void SetFlops(benchmark::State& st, double m, double k, double n) {
  st.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * k * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// args: rows, in, out, threads
void BM_DnnlSgemm(benchmark::State& st) {
  const int64_t m = st.range(0), k = st.range(1), n = st.range(2);
  omp_set_num_threads(static_cast<int>(st.range(3)));
  const auto a = Random(m * k, 1), b = Random(k * n, 2);
  std::vector<float> c(m * n);
  for (auto _ : st) {
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(st, m, k, n);
}

// The matmul primitive; blocked = weights reordered once into the layout the
// primitive picks (format_tag::any), as a load-time prepack would do.
void DnnlMatmul(benchmark::State& st, dt wdt, bool blocked, bool runtime_m) {
  const int64_t m = st.range(0), k = st.range(1), n = st.range(2);
  omp_set_num_threads(static_cast<int>(st.range(3)));
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::dim pm = runtime_m ? DNNL_RUNTIME_DIM_VAL : m;
  const memory::desc src_md({pm, k}, wdt, tag::ab), dst_md({pm, n}, dt::f32, tag::ab);
  const memory::desc wei_any({k, n}, wdt, blocked ? tag::any : tag::ab);
  const memory::desc bias_md({1, n}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, wei_any, bias_md, dst_md), eng);
  } catch (const dnnl::error& e) {
    st.SkipWithError(e.what());
    return;
  }
  const auto af = Random(m * k, 1), bf = Random(k * n, 2), biasf = Random(n, 3);
  const auto ab = ToBf16(af), bb = ToBf16(bf);
  void* a = wdt == dt::bf16 ? (void*)ab.data() : (void*)af.data();
  void* b = wdt == dt::bf16 ? (void*)bb.data() : (void*)bf.data();
  memory wei_plain({{k, n}, wdt, tag::ab}, eng, b);
  memory wei(pd.weights_desc(), eng);
  dnnl::reorder(wei_plain, wei).execute(s, wei_plain, wei);
  std::vector<float> c(m * n);
  memory src({{m, k}, wdt, tag::ab}, eng, a), dst({{m, n}, dt::f32, tag::ab}, eng, c.data());
  memory bias(bias_md, eng, (void*)biasf.data());
  dnnl::matmul prim(pd);
  st.SetLabel(pd.impl_info_str());
  for (auto _ : st) {
    prim.execute(
        s,
        {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
    s.wait();
  }
  SetFlops(st, m, k, n);
}
void BM_DnnlMatmulF32(benchmark::State& st) { DnnlMatmul(st, dt::f32, false, false); }
void BM_DnnlMatmulF32Blocked(benchmark::State& st) { DnnlMatmul(st, dt::f32, true, false); }
void BM_DnnlMatmulF32RuntimeM(benchmark::State& st) { DnnlMatmul(st, dt::f32, false, true); }
void BM_DnnlMatmulBf16(benchmark::State& st) { DnnlMatmul(st, dt::bf16, false, false); }
void BM_DnnlMatmulBf16Blocked(benchmark::State& st) { DnnlMatmul(st, dt::bf16, true, false); }
void BM_DnnlMatmulBf16RuntimeM(benchmark::State& st) { DnnlMatmul(st, dt::bf16, false, true); }

void BM_OpenblasSgemm(benchmark::State& st) {
  const int m = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1)),
            n = static_cast<int>(st.range(2));
  openblas_set_num_threads(static_cast<int>(st.range(3)));
  const auto a = Random(size_t(m) * k, 1), b = Random(size_t(k) * n, 2);
  std::vector<float> c(size_t(m) * n);
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(st, m, k, n);
}

// Debian's libopenblas 0.3.21 is built without BUILD_BFLOAT16: cblas.h
// declares cblas_sbgemm but the library does not export it. Look it up at run
// time so the benchmark reports that instead of failing to link.
using SbgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint,
                          float, const bfloat16*, blasint, const bfloat16*, blasint, float, float*,
                          blasint);

void BM_OpenblasSbgemm(benchmark::State& st) {
  static const auto sbgemm = reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  if (!sbgemm) {
    st.SkipWithError("cblas_sbgemm not exported by this OpenBLAS build (no BUILD_BFLOAT16)");
    return;
  }
  const int m = static_cast<int>(st.range(0)), k = static_cast<int>(st.range(1)),
            n = static_cast<int>(st.range(2));
  openblas_set_num_threads(static_cast<int>(st.range(3)));
  const auto a = ToBf16(Random(size_t(m) * k, 1)), b = ToBf16(Random(size_t(k) * n, 2));
  std::vector<float> c(size_t(m) * n);
  for (auto _ : st) {
    sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f,
           c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  SetFlops(st, m, k, n);
}

// What the runtime gets: Linear::Forward with bias, and GELU on the FFN's
// first layer (out = 4·in) as in the encoders (bf16 includes the per-call
// rounding of x to bf16).
void ShoalLinear(benchmark::State& st, cpu::Precision prec) {
  const int64_t m = st.range(0), k = st.range(1), n = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  const auto w = Random(k * n, 2), bias = Random(n, 3), x = Random(m * k, 1);
  auto lin = cpu::Linear::Create(w.data(), cpu::WeightLayout::kOutIn, k, n, bias.data(), prec);
  if (!lin.ok()) {
    st.SkipWithError(lin.status().ToString().c_str());
    return;
  }
  std::vector<float> y(m * n);
  const auto act = n == 4 * k ? cpu::Activation::kGelu : cpu::Activation::kNone;
  for (auto _ : st) {
    (*lin)->Forward(x.data(), m, y.data(), act, threads);
    benchmark::DoNotOptimize(y.data());
  }
  SetFlops(st, m, k, n);
}
void BM_LinearF32(benchmark::State& st) { ShoalLinear(st, cpu::Precision::kF32); }
void BM_LinearBf16(benchmark::State& st) { ShoalLinear(st, cpu::Precision::kBF16); }

// FewRowsGemm as a decode step calls it: W plain [in][out], bias.
void BM_FewRowsGemm(benchmark::State& st) {
  const int64_t m = st.range(0), k = st.range(1), n = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  if (!cpu::FewRowsGemmAvailable() || m > static_cast<int64_t>(cpu::kFewRows)) {
    st.SkipWithError("no AVX2, or more rows than FewRowsGemm takes");
    return;
  }
  omp_set_num_threads(threads);
  const auto w = Random(k * n, 2), bias = Random(n, 3), x = Random(m * k, 1);
  std::vector<float> y(m * n);
  for (auto _ : st) {
    cpu::FewRowsGemm(x.data(), m, k, w.data(), n, bias.data(), y.data(), threads);
    benchmark::DoNotOptimize(y.data());
  }
  SetFlops(st, m, k, n);
}

// A generator's decode steps: a row per sequence, qwen3-bench's layers
// (hidden 256: fused qkv 256→512, o 256→256, gate_up 256→1536, down
// 768→256) and its 151,936-wide head, on 2 threads.
void DecodeShapes(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{256, 151936}, {256, 512}, {256, 256}, {256, 1536}, {768, 256}};
  for (int64_t rows : {1, 2, 4, 8, 16, 32, 64})
    for (const auto& s : shapes) b->Args({rows, s[0], s[1], 2});
  b->ArgNames({"rows", "in", "out", "thr"})->UseRealTime()->MinWarmUpTime(0.1)->Unit(benchmark::kMillisecond);
}

void EncoderShapes(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{384, 1152}, {384, 384}, {384, 1536}, {1536, 384},
                               {768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
  for (int64_t threads : {1, 2})
    for (int64_t rows : {128, 1024, 4096})
      for (const auto& s : shapes) b->Args({rows, s[0], s[1], threads});
  // Warm-up: the first calls JIT-compile kernels and start the OpenMP team.
  b->ArgNames({"rows", "in", "out", "thr"})
      ->UseRealTime()
      ->MinWarmUpTime(0.1)
      ->Unit(benchmark::kMillisecond);
}

void Ceiling(benchmark::internal::Benchmark* b) {
  b->Args({1024, 1024, 1024, 1})->Args({1024, 1024, 1024, 2});
  b->ArgNames({"rows", "in", "out", "thr"})
      ->UseRealTime()
      ->MinWarmUpTime(0.1)
      ->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_DnnlSgemm)->Apply(Ceiling)->Name("Ceiling/DnnlSgemm");
BENCHMARK(BM_OpenblasSgemm)->Apply(Ceiling)->Name("Ceiling/OpenblasSgemm");
BENCHMARK(BM_DnnlMatmulBf16Blocked)->Apply(Ceiling)->Name("Ceiling/DnnlMatmulBf16Blocked");
BENCHMARK(BM_OpenblasSbgemm)->Apply(Ceiling)->Name("Ceiling/OpenblasSbgemm");

BENCHMARK(BM_DnnlMatmulF32Blocked)->Apply(DecodeShapes)->Name("Decode/DnnlMatmulF32Blocked");
BENCHMARK(BM_FewRowsGemm)->Apply(DecodeShapes)->Name("Decode/FewRowsGemm");

BENCHMARK(BM_DnnlSgemm)->Apply(EncoderShapes);
BENCHMARK(BM_DnnlMatmulF32)->Apply(EncoderShapes);
BENCHMARK(BM_DnnlMatmulF32Blocked)->Apply(EncoderShapes);
BENCHMARK(BM_DnnlMatmulF32RuntimeM)->Apply(EncoderShapes);
BENCHMARK(BM_DnnlMatmulBf16)->Apply(EncoderShapes);
BENCHMARK(BM_DnnlMatmulBf16Blocked)->Apply(EncoderShapes);
BENCHMARK(BM_DnnlMatmulBf16RuntimeM)->Apply(EncoderShapes);
BENCHMARK(BM_OpenblasSgemm)->Apply(EncoderShapes);
BENCHMARK(BM_OpenblasSbgemm)->Apply(EncoderShapes);
BENCHMARK(BM_LinearF32)->Apply(EncoderShapes);
BENCHMARK(BM_LinearBf16)->Apply(EncoderShapes);

// --- Non-GEMM kernels (BERT-base widths, batch 8 × 128 tokens) --------------

void BM_Attention(benchmark::State& st) {
  const int threads = static_cast<int>(st.range(0));
  const int64_t seqs = st.range(1), len = st.range(2);
  const int heads = 12, dim = 64;
  const size_t hd = static_cast<size_t>(heads) * dim, rows = seqs * len;
  const auto qkv = Random(rows * 3 * hd, 4);
  std::vector<float> out(rows * hd);
  std::vector<uint32_t> off;
  for (int64_t s = 0; s <= seqs; ++s) off.push_back(static_cast<uint32_t>(s * len));
  for (auto _ : st) {
    cpu::Attention(qkv.data(), qkv.data() + hd, qkv.data() + 2 * hd, 3 * hd, out.data(), off, heads,
                   dim, 0.125f, threads);
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(4.0 * seqs * len * len * hd * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Attention)
    ->ArgsProduct({{1, 2}, {8}, {128}})
    ->Args({1, 1, 512})
    ->Args({1, 64, 8})
    ->Args({1, 32, 16})
    ->Args({1, 16, 32})
    ->Args({1, 16, 64})
    ->ArgNames({"thr", "seqs", "len"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_LayerNormResidual(benchmark::State& st) {
  const int threads = static_cast<int>(st.range(0));
  const size_t rows = 1024, cols = 768;
  auto x = Random(rows * cols, 5);
  const auto res = Random(rows * cols, 6), g = Random(cols, 7), b = Random(cols, 8);
  for (auto _ : st) {
    cpu::LayerNorm(x.data(), res.data(), rows, cols, g.data(), b.data(), 1e-12f, threads);
    benchmark::DoNotOptimize(x.data());
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * rows * cols * 12);
}
BENCHMARK(BM_LayerNormResidual)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_Gelu(benchmark::State& st) {
  auto x = Random(size_t{1024} * 3072, 9);
  const auto orig = x;
  for (auto _ : st) {
    cpu::Activate(x.data(), x.size(), cpu::Activation::kGelu);
    st.PauseTiming();
    x = orig;
    st.ResumeTiming();
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * x.size());
}
BENCHMARK(BM_Gelu)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
