// Int8 Linear: weights quantized once at load, one symmetric scale per
// output channel; activations quantized per call, one symmetric scale per
// row (token); the product on oneDNN's s8×s8 matmul (brgemm with VNNI, or
// AMX where the CPU has it), accumulated in int32 and written as f32 with
// the weight scales applied; the row scales, bias and activation in one pass
// after (int8_rows.h). oneDNN 2.6 can scale outputs only per column, so the
// per-row scale cannot ride in the primitive.
//
// Why these choices: per-channel weight scales cost nothing at run time and
// keep a channel with small weights from losing its bits to one with large
// ones; per-token activation scales do the same for rows (a padding row or
// a short sequence's tokens do not share a scale with a long one's, and a
// row's result never depends on which rows share its batch). Symmetric s8
// on both sides needs no zero points (oneDNN 2.6 takes only one per
// tensor). LayerNorm, softmax and attention stay f32: only the dense
// layers, where the time goes, run int8.
//
// Figures (this machine, oneDNN 2.6, 1 thread, 4096×384×1536): s8 matmul
// 906 GOP/s against 232 f32 and 447 bf16; at one row (a decode step,
// 4096×4096) 2.2 ms against 8.2 f32 — it streams a quarter of the bytes.
//
// Threading and row pieces: as linear.cc's (primitives keyed by row count
// and thread count; per-thread buffers).
#include "runtime/native/kernels/cpu/linear_int8.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "runtime/native/kernels/cpu/dnnl_engine.h"
#include "runtime/native/kernels/cpu/int8_rows.h"
#include "runtime/native/kernels/cpu/isa.h"

namespace shoal::native::cpu {
namespace {

using dnnl::memory;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct Int8Buffers {
  std::vector<int8_t> xq;
  std::vector<float> row_scale;
  std::vector<uint8_t> scratchpad;
};
thread_local Int8Buffers t_int8;

class Int8Linear final : public Linear {
 public:
  Int8Linear(size_t in, size_t out) : in_(in), out_(out) {}

  // May throw dnnl::error / std::bad_alloc; CreateInt8Linear catches (CatchingDnnl).
  Status Init(const float* w, WeightLayout layout, const float* bias) {
    // Per output channel n: scale = max_k |W[k][n]| / 127; W as [out][in].
    auto at = [&](size_t n, size_t k) {
      return layout == WeightLayout::kOutIn ? w[n * in_ + k] : w[k * out_ + n];
    };
    weight_scale_.assign(out_, 0.0f);
    std::vector<int8_t> q(in_ * out_);
    for (size_t n = 0; n < out_; ++n) {
      float max_abs = 0.0f;
      for (size_t k = 0; k < in_; ++k) {
        if (!std::isfinite(at(n, k))) return InvalidInput("Linear: a weight is not finite");
        max_abs = std::max(max_abs, std::abs(at(n, k)));
      }
      const float inv = max_abs > 0 ? 127.0f / max_abs : 0.0f;
      weight_scale_[n] = max_abs / 127.0f;
      for (size_t k = 0; k < in_; ++k) {
        q[n * in_ + k] =
            static_cast<int8_t>(std::clamp(std::nearbyint(at(n, k) * inv), -127.0f, 127.0f));
      }
    }
    if (bias) bias_.assign(bias, bias + out_);
    const auto k = static_cast<memory::dim>(in_), n = static_cast<memory::dim>(out_);
    OmpThreads scope(1);
    const auto pd = MakePd(kLinearRowChunk, memory::desc({k, n}, dt::s8, tag::any));
    wei_md_ = pd.weights_desc();
    const std::string impl = pd.impl_info_str();
    if (impl.find("ref") != std::string::npos) {
      spdlog::warn("Linear {}x{} int8: oneDNN picked '{}' (no fast kernel for this CPU)", in_, out_,
                   impl);
    }
    // q is the K×N matrix stored transposed ("ba"); the reorder into the
    // primitive's layout also computes the compensation s8 sources need.
    dnnl::stream stream(CpuEngine());
    memory src_m(memory::desc({k, n}, dt::s8, tag::ba), CpuEngine(), q.data());
    weights_ = memory(wei_md_, CpuEngine());
    dnnl::reorder(src_m, weights_).execute(stream, src_m, weights_);
    stream.wait();
    (void)GetPrimitive(1, 1);  // fail the load, not a request
    return Status::Ok();
  }

  void Forward(const float* x, size_t rows, float* y, Activation act, int threads) const override {
    if (rows == 0) return;
    threads = std::max(1, threads);
    OmpThreads scope(threads);
    Int8Buffers& buf = t_int8;
    buf.xq.resize(rows * in_);
    buf.row_scale.resize(rows);
    QuantizeRowsS8(x, rows, in_, buf.xq.data(), buf.row_scale.data(), threads);
    try {
      Run(buf, rows, y, threads);
    } catch (const std::exception& e) {
      spdlog::error("Linear {}x{} int8: oneDNN matmul failed: {}", in_, out_, e.what());
      std::fill(y, y + rows * out_, std::numeric_limits<float>::quiet_NaN());
      return;
    }
    DequantizeRows(y, rows, out_, buf.row_scale.data(), bias_.empty() ? nullptr : bias_.data(), act,
                   threads);
  }

  size_t in() const override { return in_; }
  size_t out() const override { return out_; }
  size_t memory_bytes() const override {
    return wei_md_.get_size() + (bias_.size() + weight_scale_.size()) * sizeof(float);
  }

 private:
  using Cache = MatmulCache<std::pair<size_t, int>>;  // rows, threads

  dnnl::matmul::primitive_desc MakePd(size_t rows, const memory::desc& wei_md) const {
    const auto m = static_cast<memory::dim>(rows), k = static_cast<memory::dim>(in_),
               n = static_cast<memory::dim>(out_);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_output_scales(1 << 1, weight_scale_);  // per column
    const memory::desc src_md({m, k}, dt::s8, tag::ab), dst_md({m, n}, dt::f32, tag::ab);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, wei_md, dst_md), attr,
                                        CpuEngine());
  }

  std::shared_ptr<const Cache::Entry> GetPrimitive(size_t rows, int threads) const {
    return cache_.Get({rows, threads}, [&] { return MakePd(rows, wei_md_); });
  }

  void Run(Int8Buffers& buf, size_t rows, float* y, int threads) const {
    dnnl::engine& eng = CpuEngine();
    dnnl::stream stream(eng);
    const memory wei(wei_md_, eng, weights_.get_data_handle());
    ForEachRowPiece(rows, [&](size_t r0, size_t mr) {
      const auto entry = GetPrimitive(mr, threads);
      const auto m = static_cast<memory::dim>(mr), k = static_cast<memory::dim>(in_),
                 n = static_cast<memory::dim>(out_);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, memory({{m, k}, dt::s8, tag::ab}, eng, buf.xq.data() + r0 * in_)},
          {DNNL_ARG_WEIGHTS, wei},
          {DNNL_ARG_DST, memory({{m, n}, dt::f32, tag::ab}, eng, y + r0 * out_)}};
      AddScratchpad(args, entry->scratchpad_bytes, buf.scratchpad);
      entry->prim.execute(stream, args);
    });
    stream.wait();
  }

  const size_t in_, out_;
  std::vector<float> weight_scale_;  // [out]
  std::vector<float> bias_;          // [out] or empty
  memory::desc wei_md_;              // the blocked layout chosen at load
  memory weights_;                   // owns the prepacked s8 weights
  Cache cache_{2 * kLinearRowChunk};
};

}  // namespace

Result<std::unique_ptr<Linear>> CreateInt8Linear(const float* w, WeightLayout layout, size_t in,
                                                 size_t out, const float* bias) {
  auto linear = std::make_unique<Int8Linear>(in, out);
  SHOAL_RETURN_IF_ERROR(CatchingDnnl([&] { return linear->Init(w, layout, bias); }));
  return std::unique_ptr<Linear>(std::move(linear));
}

}  // namespace shoal::native::cpu
