#include "runtime/native/models/attention_pooling_head.h"

#include <algorithm>
#include <cmath>

namespace shoal::native {

Result<std::unique_ptr<AttentionPoolingHead>> AttentionPoolingHead::Load(WeightReader& r, const std::string& prefix,
                                                                         size_t hidden, size_t intermediate,
                                                                         int heads, float eps,
                                                                         cpu::Precision precision) {
  std::unique_ptr<AttentionPoolingHead> h(new AttentionPoolingHead());
  h->hidden_ = hidden, h->intermediate_ = intermediate, h->heads_ = heads, h->eps_ = eps;
  const auto H = static_cast<int64_t>(hidden);
  SHOAL_ASSIGN_OR_RETURN(const float* probe, r.Tensor(prefix + "probe", {1, 1, H}));
  SHOAL_ASSIGN_OR_RETURN(const float* in_w, r.Tensor(prefix + "attention.in_proj_weight", {3 * H, H}));
  SHOAL_ASSIGN_OR_RETURN(const float* in_b, r.Tensor(prefix + "attention.in_proj_bias", {3 * H}));
  // in_proj is q | k | v stacked: the query rows meet only the probe.
  h->query_.resize(hidden);
  for (size_t o = 0; o < hidden; ++o) {
    double acc = in_b[o];
    for (size_t i = 0; i < hidden; ++i) acc += double{in_w[o * hidden + i]} * probe[i];
    h->query_[o] = static_cast<float>(acc);
  }
  SHOAL_ASSIGN_OR_RETURN(h->kv_, cpu::Linear::Create(in_w + hidden * hidden, cpu::WeightLayout::kOutIn, hidden,
                                                     2 * hidden, in_b + hidden, precision));
  SHOAL_ASSIGN_OR_RETURN(h->out_, r.Linear({prefix + "attention.out_proj"}, {hidden}, hidden));
  SHOAL_ASSIGN_OR_RETURN(h->norm_gamma_, r.Tensor(prefix + "layernorm.weight", {H}));
  SHOAL_ASSIGN_OR_RETURN(h->norm_beta_, r.Tensor(prefix + "layernorm.bias", {H}));
  SHOAL_ASSIGN_OR_RETURN(h->fc1_, r.Linear({prefix + "mlp.fc1"}, {intermediate}, hidden));
  SHOAL_ASSIGN_OR_RETURN(h->fc2_, r.Linear({prefix + "mlp.fc2"}, {hidden}, intermediate));
  return h;
}

size_t AttentionPoolingHead::memory_bytes() const {
  return query_.size() * sizeof(float) + kv_->memory_bytes() + out_->memory_bytes() + fc1_->memory_bytes() +
         fc2_->memory_bytes();
}

void AttentionPoolingHead::Forward(const float* x, std::span<const uint32_t> offsets, float* out,
                                   int threads) const {
  const size_t H = hidden_, B = offsets.size() - 1, T = offsets.back();
  const size_t d = H / static_cast<size_t>(heads_);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const cpu::Activation none = cpu::Activation::kNone;
  std::vector<float> kv(T * 2 * H), ctx(B * H), pooled(B * H), normed(B * H), mid(B * intermediate_);
  kv_->Forward(x, T, kv.data(), none, threads);
  // One query per sequence and head, over the sequence's rows.
  std::vector<double> score;
  for (size_t b = 0; b < B; ++b) {
    const size_t first = offsets[b], rows = offsets[b + 1] - first;
    score.resize(rows);
    for (size_t h = 0; h < static_cast<size_t>(heads_); ++h) {
      const float* q = &query_[h * d];
      double top = -INFINITY;
      for (size_t j = 0; j < rows; ++j) {
        const float* k = &kv[(first + j) * 2 * H + h * d];
        double s = 0;
        for (size_t t = 0; t < d; ++t) s += double{q[t]} * k[t];
        top = std::max(top, score[j] = s * scale);
      }
      double sum = 0;
      for (double& s : score) sum += s = std::exp(s - top);
      float* c = &ctx[b * H + h * d];
      std::fill(c, c + d, 0.0f);
      for (size_t j = 0; j < rows; ++j) {
        const float* v = &kv[(first + j) * 2 * H + H + h * d];
        const auto w = static_cast<float>(score[j] / sum);
        for (size_t t = 0; t < d; ++t) c[t] += w * v[t];
      }
    }
  }
  out_->Forward(ctx.data(), B, pooled.data(), none, threads);
  cpu::ResidualLayerNorm(pooled.data(), nullptr, normed.data(), B, H, norm_gamma_, norm_beta_, eps_, threads);
  fc1_->Forward(normed.data(), B, mid.data(), cpu::Activation::kGeluTanh, threads);
  fc2_->Forward(mid.data(), B, out, none, threads);
  for (size_t k = 0; k < B * H; ++k) out[k] += pooled[k];
}

}  // namespace shoal::native
