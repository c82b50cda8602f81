// USE-Lite: weights → prepared layers, and the forward pass (see use_lite.h).
// "§n" cites /work/shared/notes/use-lite-forward.md, which was checked
// numerically against the JS reference; the comments say where this code
// follows a quirk of the graph on purpose.
#include "runtime/native/use_lite/use_lite.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/use_lite/tfjs_weights.h"

namespace shoal::native {
namespace {

constexpr size_t kWidth0 = 256;  // token embedding / layer-0 input width
constexpr size_t kWidth = UseLite::kDim;
constexpr size_t kFfnWidth = 1536;
constexpr int kHeads = 4;
// Tokens per packed chunk: bounds Embed's scratch (~15 KiB a token) for big
// batches while leaving the GEMMs hundreds of rows.
constexpr size_t kChunkTokens = 2048;

// §4's prefixes.
constexpr std::string_view kApply = "module_apply_default/Encoder_en/KonaTransformer/Encode/";
constexpr std::string_view kModule = "module/Encoder_en/KonaTransformer/Encode/";
// The embedding table: ids 0..7999 of vocab.json plus two rows no id uses
// (§1.9).
constexpr size_t kEmbeddingRows = 8002;

std::string LayerName(std::string_view prefix, int layer, std::string_view rest) {
  return fmt::format("{}Layer_{}/TransformerLayer/{}", prefix, layer, rest);
}
std::string StackName(int layer, std::string_view rest) {
  return fmt::format("{}TransformerStack/Layer_{}/TransformerLayer/{}", kApply, layer, rest);
}


Result<std::vector<float>> Copy(const TfjsWeights& w, const std::string& name,
                                const std::vector<int64_t>& shape) {
  SHOAL_ASSIGN_OR_RETURN(auto data, w.Float32(name, shape));
  return std::vector<float>(data.begin(), data.end());
}

Result<float> Scalar(const TfjsWeights& w, const std::string& name) {
  SHOAL_ASSIGN_OR_RETURN(auto data, w.Float32(name, {}));
  return data[0];
}

// A [in, out] TF matrix (or a 1×1 Conv2D kernel [1, 1, in, out], the same
// bytes, §3) and its bias as one dense layer, all float32.
Result<std::unique_ptr<cpu::Linear>> MakeLinear(const TfjsWeights& w, const std::string& kernel,
                                                bool conv, const std::string& bias, size_t in,
                                                size_t out) {
  std::vector<int64_t> shape = {static_cast<int64_t>(in), static_cast<int64_t>(out)};
  if (conv) shape.insert(shape.begin(), {1, 1});
  SHOAL_ASSIGN_OR_RETURN(auto k, w.Float32(kernel, shape));
  SHOAL_ASSIGN_OR_RETURN(auto b, w.Float32(bias, {static_cast<int64_t>(out)}));
  Result<std::unique_ptr<cpu::Linear>> linear = cpu::Linear::Create(
      k.data(), cpu::WeightLayout::kInOut, in, out, b.data(), cpu::Precision::kF32);
  if (!linear.ok())
    return Status(Code::kModelLoadFailed,
                  fmt::format("use-lite: {}: {}", kernel, linear.status().message()));
  return linear;
}

void AddInPlace(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

struct UseLite::Layer {
  size_t width = 0;  // input width: 256 for layer 0, 512 for layer 1
  int head_dim = 0;  // width / kHeads
  float scale = 0;   // the graph's stored 1/√head_dim
  std::vector<float> ln_att_gamma, ln_att_beta, ln_ffn_gamma, ln_ffn_beta;
  std::unique_ptr<cpu::Linear> qkv, output, ffn1, ffn2;
  std::unique_ptr<cpu::Linear> residual;  // layer 0 only: 256 → 512 ("AdjustResidualInput")

  size_t memory_bytes() const {
    size_t bytes = (ln_att_gamma.size() * 2 + ln_ffn_gamma.size() * 2) * sizeof(float);
    for (const auto* l : {&qkv, &output, &ffn1, &ffn2, &residual})
      if (*l) bytes += (*l)->memory_bytes();
    return bytes;
  }
};

UseLite::UseLite() = default;
UseLite::~UseLite() = default;

Result<std::unique_ptr<UseLite>> UseLite::Load(const std::string& dir) {
  std::unique_ptr<UseLite> m(new UseLite());
  SHOAL_ASSIGN_OR_RETURN(auto tokenizer, UseLiteTokenizer::Load(dir + "/vocab.json"));
  m->tokenizer_ = std::move(tokenizer);
  // The whole weights buffer lives only for the load: the Linears copy what
  // they need in their own layout, and the rest is copied below.
  SHOAL_ASSIGN_OR_RETURN(auto w, TfjsWeights::Load(dir + "/model.json"));

  SHOAL_ASSIGN_OR_RETURN(auto embedding, Copy(*w, "module/Embeddings_en", {kEmbeddingRows, kWidth0}));
  m->embedding_ = std::move(embedding);
  m->embedding_rows_ = kEmbeddingRows;
  if (m->tokenizer_->vocab_size() > m->embedding_rows_)
    return Status(Code::kModelLoadFailed, "use-lite: vocab.json has more ids than embedding rows");

  SHOAL_ASSIGN_OR_RETURN(auto max_len,
      w->Int32("module_apply_default/Encoder_en/KonaTransformer/ClipToMaxLength/Less/y", {}));
  if (static_cast<size_t>(max_len[0]) != kMaxTokens)
    return Status(Code::kModelLoadFailed,
                  fmt::format("use-lite: max length {} in the graph, this code is written for {}",
                              max_len[0], kMaxTokens));

  // §3 step 1: the timing signal, sin(j·ω_i) for i < 128 then cos(j·ω_i) —
  // concatenated, not interleaved — with the argument float32(j)·ω_i and the
  // stored ω (not recomputed).
  SHOAL_ASSIGN_OR_RETURN(auto omega,
      w->Float32(fmt::format("{}TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1",
                             kApply),
                 {1, kWidth0 / 2}));
  m->timing_.resize(kMaxTokens * kWidth0);
  for (size_t j = 0; j < kMaxTokens; ++j) {
    for (size_t i = 0; i < kWidth0 / 2; ++i) {
      float arg = static_cast<float>(j) * omega[i];
      m->timing_[j * kWidth0 + i] = std::sin(arg);
      m->timing_[j * kWidth0 + kWidth0 / 2 + i] = std::cos(arg);
    }
  }

  // §3: one ε for all four LayerNorms; the L2 floor on the squared norm.
  SHOAL_ASSIGN_OR_RETURN(auto eps, Scalar(*w, StackName(1, "FFN/layer_prepostprocess/layer_norm/Cast/x")));
  m->ln_eps_ = eps;
  SHOAL_ASSIGN_OR_RETURN(auto floor, Scalar(*w, "module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y"));
  m->l2_floor_ = floor;

  for (int l = 0; l < 2; ++l) {
    auto layer = std::make_unique<Layer>();
    layer->width = l == 0 ? kWidth0 : kWidth;
    layer->head_dim = static_cast<int>(layer->width) / kHeads;
    const auto wi = static_cast<int64_t>(layer->width);
    SHOAL_ASSIGN_OR_RETURN(auto scale, Scalar(*w, StackName(l, "MultiheadAttention/mul/y")));
    layer->scale = scale;
    const std::string lnp = "layer_prepostprocess/layer_norm/";
    SHOAL_ASSIGN_OR_RETURN(auto g0, Copy(*w, LayerName(kApply, l, lnp + "layer_norm_scale/ConcatPartitions/concat"), {wi}));
    SHOAL_ASSIGN_OR_RETURN(auto b0, Copy(*w, LayerName(kApply, l, lnp + "layer_norm_bias/ConcatPartitions/concat"), {wi}));
    SHOAL_ASSIGN_OR_RETURN(auto g1,
        Copy(*w, LayerName(kApply, l, "FFN/" + lnp + "layer_norm_scale/ConcatPartitions/concat"),
             {kWidth}));
    SHOAL_ASSIGN_OR_RETURN(auto b1, Copy(*w, LayerName(kApply, l, "FFN/" + lnp + "layer_norm_bias/ConcatPartitions/concat"),
                 {kWidth}));
    layer->ln_att_gamma = std::move(g0);
    layer->ln_att_beta = std::move(b0);
    layer->ln_ffn_gamma = std::move(g1);
    layer->ln_ffn_beta = std::move(b1);

    const std::string mha = "MultiheadAttention/";
    SHOAL_ASSIGN_OR_RETURN(auto qkv,
        MakeLinear(*w, LayerName(kModule, l, mha + "qkv_transform_single/kernel/part_0"), true,
                   LayerName(kApply, l, mha + "qkv_transform_single/bias/ConcatPartitions/concat"),
                   layer->width, 3 * layer->width));
    SHOAL_ASSIGN_OR_RETURN(auto out, MakeLinear(
                 *w, LayerName(kModule, l, mha + "output_transform_single/kernel/part_0"), true,
                 LayerName(kApply, l, mha + "output_transform_single/bias/ConcatPartitions/concat"),
                 layer->width, kWidth));
    SHOAL_ASSIGN_OR_RETURN(auto ffn1, MakeLinear(*w, StackName(l, "FFN/conv1/Tensordot/Reshape_1"), false,
                                     LayerName(kApply, l, "FFN/conv1/bias/ConcatPartitions/concat"),
                                     kWidth, kFfnWidth));
    SHOAL_ASSIGN_OR_RETURN(auto ffn2, MakeLinear(*w, StackName(l, "FFN/conv2/Tensordot/Reshape_1"), false,
                                     LayerName(kApply, l, "FFN/conv2/bias/ConcatPartitions/concat"),
                                     kFfnWidth, kWidth));
    layer->qkv = std::move(qkv);
    layer->output = std::move(out);
    layer->ffn1 = std::move(ffn1);
    layer->ffn2 = std::move(ffn2);
    if (l == 0) {
      SHOAL_ASSIGN_OR_RETURN(auto dense,
          MakeLinear(*w, LayerName(kApply, 0, "dense/kernel/ConcatPartitions/concat"), false,
                     LayerName(kApply, 0, "dense/bias/ConcatPartitions/concat"), kWidth0, kWidth));
      layer->residual = std::move(dense);
    }
    m->layers_[l] = std::move(layer);
  }

  SHOAL_ASSIGN_OR_RETURN(auto tanh_layer,
                  MakeLinear(*w, "module/Encoder_en/hidden_layers/tanh_layer_0/weights", false,
                             "module/Encoder_en/hidden_layers/tanh_layer_0/bias", kWidth, kWidth));
  m->tanh_layer_ = std::move(tanh_layer);
  return m;
}

std::vector<int32_t> UseLite::Tokenize(std::string_view text) const {
  return tokenizer_->Encode(text);
}

std::string_view UseLite::Piece(int32_t id) const { return tokenizer_->Piece(id); }

size_t UseLite::memory_bytes() const {
  size_t bytes = sizeof(*this) + (embedding_.capacity() + timing_.capacity()) * sizeof(float) +
                 tokenizer_->memory_bytes() + tanh_layer_->memory_bytes();
  for (const auto& l : layers_) bytes += l->memory_bytes();
  return bytes;
}

void UseLite::EncodeChunk(std::span<const int32_t> ids, std::span<const uint32_t> offsets,
                          float* pooled, int threads) const {
  const size_t t = ids.size();
  // Scratch, per call (Embed is const and runs concurrently).
  std::vector<float> x0(t * kWidth0);     // layer-0 input
  std::vector<float> h(t * kWidth);       // the residual stream
  std::vector<float> y(t * kWidth);       // LayerNorm output
  std::vector<float> big(t * kFfnWidth);  // QKV, then the FFN's hidden layer
  std::vector<float> att(t * kWidth);     // attention output, heads side by side
  std::vector<float> tmp(t * kWidth);     // a projection to add to the stream

  // §3 step 1: x_j = 2·E[t_j] + P_j. The token embedding really enters twice
  // (AddTimingSignal computes e + P, Layer_0/add adds the plain e again);
  // summed in the graph's order. Positions restart at 0 in every sentence.
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    for (uint32_t r = offsets[s]; r < offsets[s + 1]; ++r) {
      const float* e = &embedding_[static_cast<size_t>(ids[r]) * kWidth0];
      const float* p = &timing_[(r - offsets[s]) * kWidth0];
      float* x = &x0[r * kWidth0];
      for (size_t i = 0; i < kWidth0; ++i) x[i] = (e[i] + p[i]) + e[i];
    }
  }

  // The FFN half of a layer (pre-norm): h += W2·ReLU(W1·LN(h) + b1) + b2.
  auto ffn = [&](const Layer& layer) {
    std::memcpy(y.data(), h.data(), t * kWidth * sizeof(float));
    cpu::LayerNorm(y.data(), nullptr, t, kWidth, layer.ln_ffn_gamma.data(),
                   layer.ln_ffn_beta.data(), ln_eps_, threads);
    layer.ffn1->Forward(y.data(), t, big.data(), cpu::Activation::kRelu, threads);
    layer.ffn2->Forward(big.data(), t, tmp.data(), cpu::Activation::kNone, threads);
    AddInPlace(h.data(), tmp.data(), t * kWidth);
  };
  // The attention half up to the heads' concatenated output in `att`.
  auto attention = [&](const Layer& layer, const float* in) {
    const size_t w = layer.width;
    std::memcpy(y.data(), in, t * w * sizeof(float));
    cpu::LayerNorm(y.data(), nullptr, t, w, layer.ln_att_gamma.data(), layer.ln_att_beta.data(),
                   ln_eps_, threads);
    layer.qkv->Forward(y.data(), t, big.data(), cpu::Activation::kNone, threads);
    // Q, K, V are the column blocks [0,w), [w,2w), [2w,3w) of the fused
    // output; 4 heads of w/4 columns each. Packed sequences never see each
    // other, which is what the graph's −1e9 padding bias achieves (§2).
    cpu::Attention(big.data(), big.data() + w, big.data() + 2 * w, 3 * w, att.data(), offsets,
                   kHeads, layer.head_dim, layer.scale, threads);
  };

  // §3 step 2, layer 0 (256 → 512): the residual is a projection of the
  // un-normalized input x0 ("AdjustResidualInput"), x1 = a + r.
  const Layer& l0 = *layers_[0];
  attention(l0, x0.data());
  l0.output->Forward(att.data(), t, h.data(), cpu::Activation::kNone, threads);
  l0.residual->Forward(x0.data(), t, tmp.data(), cpu::Activation::kNone, threads);
  AddInPlace(h.data(), tmp.data(), t * kWidth);
  ffn(l0);

  // §3 step 3, layer 1 (512 → 512): identity residual. No final LayerNorm.
  const Layer& l1 = *layers_[1];
  attention(l1, h.data());
  l1.output->Forward(att.data(), t, tmp.data(), cpu::Activation::kNone, threads);
  AddInPlace(h.data(), tmp.data(), t * kWidth);
  ffn(l1);

  // §3 step 4: plain mean over the sentence's (≤ 128) tokens.
  cpu::MeanPool(h.data(), kWidth, offsets, pooled);
}

Status UseLite::Embed(std::span<const std::vector<int32_t>> sentences, bool normalize, float* out,
                      int threads) const {
  threads = std::max(threads, 1);
  const size_t batch = sentences.size();
  if (batch == 0) return Status::Ok();
  if (out == nullptr) return InvalidInput("use-lite: no output buffer");
  for (size_t b = 0; b < batch; ++b) {
    const size_t n = std::min(sentences[b].size(), kMaxTokens);
    for (size_t j = 0; j < n; ++j) {
      int32_t id = sentences[b][j];
      if (id < 0 || static_cast<size_t>(id) >= embedding_rows_)
        return InvalidInput(fmt::format("use-lite: sentence {}: token id {} outside [0, {})", b, id,
                                        embedding_rows_));
    }
  }

  // Pooled means, one row per sentence. An empty sentence keeps m = 0 (§2
  // (c), §3 "L = 0"): its vector is l2norm(tanh(bt)) wherever it sits.
  std::vector<float> pooled(batch * kWidth, 0.0f);
  std::vector<int32_t> ids;
  std::vector<uint32_t> offsets = {0};
  std::vector<size_t> members;  // sentence index of each packed sequence
  std::vector<float> chunk_pooled;
  auto flush = [&] {
    if (members.empty()) return;
    chunk_pooled.resize(members.size() * kWidth);
    EncodeChunk(ids, offsets, chunk_pooled.data(), threads);
    for (size_t s = 0; s < members.size(); ++s)
      std::memcpy(&pooled[members[s] * kWidth], &chunk_pooled[s * kWidth], kWidth * sizeof(float));
    ids.clear();
    offsets.assign(1, 0);
    members.clear();
  };
  for (size_t b = 0; b < batch; ++b) {
    // The graph keeps only the first kMaxTokens ids (ClipToMaxLength, §2 (a)).
    const size_t n = std::min(sentences[b].size(), kMaxTokens);
    if (n == 0) continue;
    if (ids.size() + n > kChunkTokens) flush();
    ids.insert(ids.end(), sentences[b].begin(), sentences[b].begin() + static_cast<ptrdiff_t>(n));
    offsets.push_back(static_cast<uint32_t>(ids.size()));
    members.push_back(b);
  }
  flush();

  // §3 steps 5–6: u = tanh(m·Wt + bt), then u / sqrt(max(Σu², floor)), i.e.
  // u / max(‖u‖, sqrt(floor)) in the kernel's terms.
  tanh_layer_->Forward(pooled.data(), batch, out, cpu::Activation::kTanh, threads);
  if (normalize) {
    const float eps = std::sqrt(l2_floor_);
    for (size_t b = 0; b < batch; ++b) cpu::L2Normalize(out + b * kWidth, kWidth, eps);
  }
  return Status::Ok();
}


}  // namespace shoal::native
