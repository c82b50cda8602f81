#include "runtime/native/models/pre_norm_blocks.h"

#include <cmath>

namespace shoal::native {

struct PreNormBlocks::Layer {
  const float* norm1_gamma = nullptr;
  const float* norm1_beta = nullptr;
  std::unique_ptr<cpu::Linear> qkv;  // q | k | v: [H] → [3H]
  std::unique_ptr<cpu::Linear> out;  // [H] → [H]
  const float* norm2_gamma = nullptr;
  const float* norm2_beta = nullptr;
  std::unique_ptr<cpu::Linear> fc1;  // [H] → [I]
  std::unique_ptr<cpu::Linear> fc2;  // [I] → [H]
};

namespace {

// x · σ(1.702 x), in place.
void QuickGelu(float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
}

}  // namespace

Result<BlockActivation> ParseBlockActivation(const std::string& name, const std::string& field) {
  if (name == "quick_gelu") return BlockActivation::kQuickGelu;
  if (name == "gelu") return BlockActivation::kGelu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new") return BlockActivation::kGeluTanh;
  return InvalidInput("config.json: " + field + ": '" + name +
                      "' is not supported (quick_gelu, gelu, gelu_pytorch_tanh, gelu_new)");
}

BlockNames ClipBlockNames(const std::string& tower) {
  return {tower + "encoder.layers.", "layer_norm1", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
          "self_attn.out_proj", "layer_norm2", "mlp.fc1", "mlp.fc2"};
}

PreNormBlocks::~PreNormBlocks() = default;

Result<std::unique_ptr<PreNormBlocks>> PreNormBlocks::Load(WeightReader& r, const BlockNames& n,
                                                           const BlockShape& shape,
                                                           const std::function<void(double)>& progress) {
  std::unique_ptr<PreNormBlocks> m(new PreNormBlocks());
  m->shape_ = shape;
  const size_t h = shape.hidden, inter = shape.intermediate;
  const auto H = static_cast<int64_t>(h);
  auto norm = [&](const std::string& name, const float** gamma, const float** beta) -> Status {
    SHOAL_ASSIGN_OR_RETURN(*gamma, r.Tensor(name + ".weight", {H}));
    SHOAL_ASSIGN_OR_RETURN(*beta, r.Tensor(name + ".bias", {H}));
    return Status::Ok();
  };
  m->layers_.resize(shape.layers);
  for (size_t i = 0; i < shape.layers; ++i) {
    Layer& L = m->layers_[i];
    const std::string l = n.layer + std::to_string(i) + ".";
    SHOAL_RETURN_IF_ERROR(norm(l + n.norm1, &L.norm1_gamma, &L.norm1_beta));
    SHOAL_ASSIGN_OR_RETURN(L.qkv, r.Linear({l + n.q, l + n.k, l + n.v}, {h, h, h}, h));
    SHOAL_ASSIGN_OR_RETURN(L.out, r.Linear({l + n.out}, {h}, h));
    SHOAL_RETURN_IF_ERROR(norm(l + n.norm2, &L.norm2_gamma, &L.norm2_beta));
    SHOAL_ASSIGN_OR_RETURN(L.fc1, r.Linear({l + n.fc1}, {inter}, h));
    SHOAL_ASSIGN_OR_RETURN(L.fc2, r.Linear({l + n.fc2}, {h}, inter));
    m->bytes_ += L.qkv->memory_bytes() + L.out->memory_bytes() + L.fc1->memory_bytes() + L.fc2->memory_bytes() +
                 4 * h * sizeof(float);
    if (progress) progress(static_cast<double>(i + 1) / static_cast<double>(shape.layers));
  }
  return m;
}

void PreNormBlocks::Forward(float* x, std::span<const uint32_t> offsets, bool causal, int threads) const {
  const size_t T = offsets.back(), H = shape_.hidden, I = shape_.intermediate;
  const int heads = shape_.heads, head_dim = static_cast<int>(H) / heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim)), eps = shape_.eps;
  const cpu::Activation none = cpu::Activation::kNone;
  const cpu::Activation act = shape_.activation == BlockActivation::kGelu       ? cpu::Activation::kGelu
                              : shape_.activation == BlockActivation::kGeluTanh ? cpu::Activation::kGeluTanh
                                                                                : none;  // quick_gelu, below
  std::vector<float> h(T * H), qkv(T * 3 * H), ctx(T * H), delta(T * H), mid(T * I);
  for (const Layer& L : layers_) {
    cpu::ResidualLayerNorm(x, nullptr, h.data(), T, H, L.norm1_gamma, L.norm1_beta, eps, threads);
    L.qkv->Forward(h.data(), T, qkv.data(), none, threads);
    cpu::Attention(qkv.data(), qkv.data() + H, qkv.data() + 2 * H, 3 * H, ctx.data(), offsets, heads, head_dim,
                   scale, threads, 0, {}, nullptr, causal);
    L.out->Forward(ctx.data(), T, delta.data(), none, threads);
    cpu::ResidualLayerNorm(x, delta.data(), h.data(), T, H, L.norm2_gamma, L.norm2_beta, eps, threads);
    L.fc1->Forward(h.data(), T, mid.data(), act, threads);
    if (shape_.activation == BlockActivation::kQuickGelu) QuickGelu(mid.data(), T * I);
    L.fc2->Forward(mid.data(), T, delta.data(), none, threads);
    for (size_t k = 0; k < T * H; ++k) x[k] += delta[k];
  }
}

}  // namespace shoal::native
