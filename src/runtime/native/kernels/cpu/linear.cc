// Linear: y = act(x · W + b) on oneDNN's matmul primitive (brgemm), fp32 or
// bf16, weights prepacked at load into the blocked layout the primitive wants.
//
// Why this backend: bench/kernels_bench.cc on this machine (AMD EPYC, AVX-512
// + AVX512_BF16, 2 cores), chunks run only while both cores were idle (other
// engineers share them), medians of 3, GFLOP/s over the 24 MiniLM-L6 /
// BERT-base shapes (in×out 384×{384,1152,1536}, 1536×384, 768×{768,2304,3072},
// 3072×768; rows 128 / 1024 / 4096), min–max (median):
//                                     1 thread          2 threads
//   fp32  oneDNN matmul, blocked W    101–114 (108)     210–227 (216)
//         oneDNN dnnl_sgemm            98–115 (110)     14–229 (214)*
//         OpenBLAS cblas_sgemm         84–105  (99)     161–213 (198)
//   bf16  oneDNN matmul, blocked W    195–230 (218)     223–462 (437)*
//         oneDNN matmul, plain W      174–217 (205)     210–446 (405)*
//         OpenBLAS cblas_sbgemm       not exported by Debian's 0.3.21 build
//   this Linear (bias, GELU on out=4·in, bf16 incl. rounding x):
//         fp32                         99–115 (108)     190–229 (216)
//         bf16                        171–225 (210)     320–424 (396)
//   1024³ SGEMM ceiling: oneDNN 102 (1 thread) / 178 (2), OpenBLAS 100 / 166;
//   bf16 matmul 222 / 413.                    (* outliers from stray load)
// oneDNN is as fast or faster everywhere, bf16 doubles fp32 throughput, the
// matmul primitive fuses bias + activation (GELU's share is 1–8 % fp32,
// 10–20 % bf16 at in=384 where the GEMM per output is short; with plain
// weights fp32 GELU shapes lost up to 25 %), its thread count follows the
// caller's OpenMP setting per call (OpenBLAS's is process-wide and runs in
// its own spinning pthread pool), and with one fixed blocked weight layout
// every row count 1…5000 still selects brg:avx512_core(_bf16). The runtime-M
// variant (DNNL_RUNTIME_DIM_VAL) falls back to gemm:jit, 3–5 % slower in bf16.
//
// Row counts: a primitive is specialized for its M, and creating one takes
// 0.1–1 ms. Rows run in at most two pieces: the largest multiple of kChunk
// (256) and the remainder, so the primitives a Linear holds stay bounded
// (≤ kChunk remainders + max_rows/kChunk multiples, per activation and thread
// count) whatever the batch mix, and warm up quickly. Splitting costs nothing
// measurable on one thread (4096 rows as 16×256: 111 vs 109 GFLOP/s fp32);
// it is not done finer because every piece is an OpenMP fork/join, and on a
// loaded machine a join can wait out a scheduler time slice (16 pieces of
// 256 rows on 2 threads ran 10× slower than one 4096-row piece under load).
// bf16: x is rounded to bf16 into a per-thread buffer (oneDNN 2.6 has no
// f32×bf16 matmul); accumulation and y stay fp32.
//
// Threading: Forward runs under OmpThreads(threads), so oneDNN's and our
// OpenMP regions use at most `threads` threads of the calling thread's team;
// primitives are keyed by thread count (oneDNN fixes its work split at
// creation). Concurrent Forward calls are safe: the cache is thread-safe,
// primitives and weights are immutable, and every call brings its own stream
// and scratchpad (scratchpad_mode::user).
#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "runtime/native/kernels/cpu/dnnl_engine.h"
#include "runtime/native/kernels/cpu/few_rows_gemm.h"
#include "runtime/native/kernels/cpu/isa.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/kernels/cpu/linear_int8.h"
#include "runtime/native/kernels/cpu/vec_math.h"

namespace shoal::native::cpu {
namespace {

using dnnl::memory;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr size_t kChunk = kLinearRowChunk;

dnnl::algorithm EltwiseOf(Activation act) {
  switch (act) {
    case Activation::kGelu:
      return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::kGeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::kRelu:
      return dnnl::algorithm::eltwise_relu;
    case Activation::kTanh:
      return dnnl::algorithm::eltwise_tanh;
    case Activation::kNone:
      break;
  }
  return dnnl::algorithm::undef;
}

// Per-thread buffers reused across calls: the bf16 activations (and, where
// bf16 is emulated, them widened back to f32) and the primitive's scratchpad.
struct CallBuffers {
  std::vector<uint16_t> x_bf16;
  std::vector<float> x_rounded;
  std::vector<uint8_t> scratchpad;
};
thread_local CallBuffers t_buffers;

// Values rounded to bf16 precision, kept as f32.
std::vector<float> RoundedToBf16(const float* v, size_t n) {
  std::vector<uint16_t> half(n);
  std::vector<float> out(n);
  F32ToBf16(v, half.data(), n);
  Bf16ToF32(half.data(), out.data(), n);
  return out;
}

// Whether oneDNN has a bf16 matmul on this CPU (it has from AVX-512 up; an
// AVX2 CPU has none). Asked once, with a primitive of the smallest shape.
bool Bf16MatmulAvailable() {
  static const bool available = [] {
    try {
      const memory::desc a({1, 16}, dt::bf16, tag::ab), b({16, 16}, dt::bf16, tag::any),
          c({1, 16}, dt::f32, tag::ab);
      (void)dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), CpuEngine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

class DnnlLinear final : public Linear {
 public:
  DnnlLinear(size_t in, size_t out, Precision precision)
      : in_(in), out_(out), dt_(precision == Precision::kBF16 ? dt::bf16 : dt::f32) {}

  // May throw dnnl::error / std::bad_alloc; Create catches.
  Status Init(const float* w, WeightLayout layout, const float* bias) {
    const auto k = static_cast<memory::dim>(in_), n = static_cast<memory::dim>(out_);
    std::vector<float> w_rounded;
    if (dt_ == dt::bf16 && !Bf16MatmulAvailable()) {
      // No bf16 matmul on this CPU: the same numbers through the f32 one —
      // bf16 weights, x rounded to bf16 per call, fp32 accumulation — at
      // f32 speed and size.
      static std::once_flag logged;
      std::call_once(logged, [] {
        spdlog::info("Linear: this CPU has no bf16 matmul (oneDNN needs AVX-512); bf16 runs emulated in f32");
      });
      emulated_bf16_ = true;
      dt_ = dt::f32;
      w_rounded = RoundedToBf16(w, in_ * out_);
      w = w_rounded.data();
    }
    // The source matrix in its own layout: [in][out] is "ab" of K×N, and
    // [out][in] is the same K×N matrix stored transposed ("ba").
    std::vector<uint16_t> w_bf16;
    const void* src = w;
    if (dt_ == dt::bf16) {
      w_bf16.resize(in_ * out_);
      F32ToBf16(w, w_bf16.data(), w_bf16.size());
      src = w_bf16.data();
    }
    const memory::desc src_md({k, n}, dt_, layout == WeightLayout::kInOut ? tag::ab : tag::ba);
    if (bias) {
      bias_.assign(bias, bias + out_);
      bias_md_ = memory::desc({1, n}, dt::f32, tag::ab);
    }
    // The layout the primitive wants, asked once with a representative M;
    // every other M is then created against this fixed layout.
    OmpThreads scope(1);
    const auto pd = MakePd(kChunk, Activation::kNone, memory::desc({k, n}, dt_, tag::any));
    wei_md_ = pd.weights_desc();
    const std::string impl = pd.impl_info_str();
    if (impl.find("ref") != std::string::npos) {
      spdlog::warn("Linear {}x{} {}: oneDNN picked '{}' (no fast kernel for this CPU)", in_, out_,
                   dt_ == dt::bf16 ? "bf16" : "f32", impl);
    }
    dnnl::stream stream(CpuEngine());
    memory src_m(src_md, CpuEngine(), const_cast<void*>(src));
    weights_ = memory(wei_md_, CpuEngine());
    dnnl::reorder(src_m, weights_).execute(stream, src_m, weights_);
    stream.wait();
    (void)GetPrimitive(1, Activation::kNone, 1);  // fail the load, not a request
    // W plain [in][out] f32 (what oneDNN picks on AVX2): steps of 2 to 8
    // rows take FewRowsGemm, which streams W once whatever their count (one
    // row stays with oneDNN's GEMV, which streams it faster still).
    few_rows_ = dt_ == dt::f32 && !emulated_bf16_ && wei_md_ == memory::desc({k, n}, dt::f32, tag::ab) &&
                out_ % 8 == 0 && FewRowsGemmAvailable();
    return Status::Ok();
  }

  void Forward(const float* x, size_t rows, float* y, Activation act, int threads) const override {
    if (rows == 0) return;
    threads = std::max(1, threads);
    OmpThreads scope(threads);
    if (few_rows_ && rows >= 2 && rows <= kFewRows && act == Activation::kNone) {
      FewRowsGemm(x, rows, in_, static_cast<const float*>(weights_.get_data_handle()), out_,
                  bias_.empty() ? nullptr : bias_.data(), y, threads);
      return;
    }
    try {
      Run(x, rows, y, act, threads);
    } catch (const std::exception& e) {
      // Only reachable if oneDNN fails after a successful load (out of
      // memory): the output is poisoned so the failure cannot pass unseen.
      spdlog::error("Linear {}x{}: oneDNN matmul failed: {}", in_, out_, e.what());
      std::fill(y, y + rows * out_, std::numeric_limits<float>::quiet_NaN());
    }
  }

  size_t in() const override { return in_; }
  size_t out() const override { return out_; }
  size_t memory_bytes() const override { return wei_md_.get_size() + bias_.size() * sizeof(float); }

 private:
  using Cache = MatmulCache<std::tuple<size_t, Activation, int>>;  // rows, activation, threads

  dnnl::matmul::primitive_desc MakePd(size_t rows, Activation act,
                                      const memory::desc& wei_md) const {
    const auto m = static_cast<memory::dim>(rows), k = static_cast<memory::dim>(in_),
               n = static_cast<memory::dim>(out_);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (act != Activation::kNone) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, EltwiseOf(act), 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    const memory::desc src_md({m, k}, dt_, tag::ab), dst_md({m, n}, dt::f32, tag::ab);
    const memory::desc bias_md({1, n}, dt::f32, tag::ab);
    const auto desc = bias_.empty() ? dnnl::matmul::desc(src_md, wei_md, dst_md)
                                    : dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md);
    return dnnl::matmul::primitive_desc(desc, attr, CpuEngine());
  }

  std::shared_ptr<const Cache::Entry> GetPrimitive(size_t rows, Activation act, int threads) const {
    return cache_.Get({rows, act, threads}, [&] { return MakePd(rows, act, wei_md_); });
  }

  void Run(const float* x, size_t rows, float* y, Activation act, int threads) const {
    dnnl::engine& eng = CpuEngine();
    dnnl::stream stream(eng);
    CallBuffers& buf = t_buffers;
    const void* src = x;
    if (emulated_bf16_) {
      buf.x_bf16.resize(rows * in_);
      buf.x_rounded.resize(rows * in_);
      F32ToBf16(x, buf.x_bf16.data(), rows * in_);
      Bf16ToF32(buf.x_bf16.data(), buf.x_rounded.data(), rows * in_);
      src = buf.x_rounded.data();
    } else if (dt_ == dt::bf16) {
      // One parallel region for the whole input (each region is a fork/join,
      // and under load a join can wait out a time slice).
      buf.x_bf16.resize(rows * in_);
      uint16_t* xb = buf.x_bf16.data();
      const size_t cols = in_;
#pragma omp parallel for num_threads(threads) \
    schedule(static) if (threads > 1 && rows * cols >= 32768)
      for (size_t r = 0; r < rows; ++r) F32ToBf16(x + r * cols, xb + r * cols, cols);
      src = xb;
    }
    const size_t elem = dt_ == dt::bf16 ? sizeof(uint16_t) : sizeof(float);
    const memory wei(wei_md_, eng, weights_.get_data_handle());
    ForEachRowPiece(rows, [&](size_t r0, size_t mr) {
      const auto entry = GetPrimitive(mr, act, threads);
      const auto m = static_cast<memory::dim>(mr), k = static_cast<memory::dim>(in_),
                 n = static_cast<memory::dim>(out_);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC,
           memory({{m, k}, dt_, tag::ab}, eng,
                  const_cast<char*>(static_cast<const char*>(src)) + r0 * in_ * elem)},
          {DNNL_ARG_WEIGHTS, wei},
          {DNNL_ARG_DST, memory({{m, n}, dt::f32, tag::ab}, eng, y + r0 * out_)}};
      AddScratchpad(args, entry->scratchpad_bytes, buf.scratchpad);
      if (!bias_.empty()) {
        args.emplace(DNNL_ARG_BIAS, memory(bias_md_, eng, const_cast<float*>(bias_.data())));
      }
      entry->prim.execute(stream, args);
    });
    stream.wait();
  }

  const size_t in_, out_;
  dt dt_;                       // what the primitive computes in (f32 where bf16 is emulated)
  bool emulated_bf16_ = false;  // bf16 asked for, on a CPU without a bf16 matmul
  bool few_rows_ = false;       // few rows take FewRowsGemm (W plain f32, AVX2)
  memory::desc wei_md_;      // the blocked layout chosen at load
  memory weights_;           // owns the prepacked weights
  std::vector<float> bias_;  // [out] or empty
  memory::desc bias_md_;
  Cache cache_{4 * kChunk};
};

}  // namespace

Result<std::unique_ptr<Linear>> Linear::Create(const float* w, WeightLayout layout, size_t in,
                                               size_t out, const float* bias, Precision precision) {
  if (!w || in == 0 || out == 0) return InvalidInput("Linear: empty weight matrix");
  if (precision == Precision::kInt8) return CreateInt8Linear(w, layout, in, out, bias);
  auto linear = std::make_unique<DnnlLinear>(in, out, precision);
  SHOAL_RETURN_IF_ERROR(CatchingDnnl([&] { return linear->Init(w, layout, bias); }));
  return std::unique_ptr<Linear>(std::move(linear));
}

}  // namespace shoal::native::cpu
