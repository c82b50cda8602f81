#include "runtime/native/models/modernbert.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/native/kernels/cpu/decoder_kernels.h"
#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

struct ModernBert::Layer {
  const float* attn_gamma = nullptr;  // null on layer 0: it reads the embeddings' norm
  const float* attn_beta = nullptr;
  std::unique_ptr<cpu::Linear> qkv;  // Wqkv: [H] → [3H]
  std::unique_ptr<cpu::Linear> attn_out;  // Wo: [H] → [H]
  const float* mlp_gamma = nullptr;
  const float* mlp_beta = nullptr;
  std::unique_ptr<cpu::Linear> wi;  // [H] → [2I]: the GELU's input, then the gate
  std::unique_ptr<cpu::Linear> wo;  // [I] → [H]
  bool global = true;
};

namespace {

// Where the encoder's tensors live: bare (ModernBertModel, sentence-
// transformers) or under "model." (the task models).
std::string Prefix(const SafeTensors& w) {
  return w.Find("embeddings.tok_embeddings.weight") ? "" : "model.";
}

}  // namespace

ModernBert::~ModernBert() = default;

Result<std::unique_ptr<ModernBert>> ModernBert::Load(const std::string& dir, const EncoderConfig& config,
                                                     cpu::Precision precision,
                                                     const std::function<void(double)>& progress) {
  if (!config.is_modernbert()) return InvalidInput(dir + ": not a ModernBERT config (model_type modernbert)");
  const size_t head_dim = config.hidden_size / config.num_attention_heads;
  if (head_dim % 2 != 0) return InvalidInput(dir + ": rotary embeddings need an even head size");
  std::unique_ptr<ModernBert> m(new ModernBert());
  m->config_ = config;
  auto weights = SafeTensors::OpenDir(dir);
  if (!weights.ok()) return weights.status();
  m->weights_ = std::move(weights).value();
  const SafeTensors& w = *m->weights_;
  WeightReader r(w, &m->converted_, precision);

  const int64_t H = config.hidden_size;
  const size_t h = config.hidden_size, inter = config.intermediate_size;
  const bool norm_bias = config.modernbert.norm_bias;
  // A LayerNorm's weight, and its bias where the config says norms have one.
  auto norm = [&](const std::string& name, const float** gamma, const float** beta) -> Status {
    SHOAL_ASSIGN_OR_RETURN(*gamma, r.Tensor(name + ".weight", {H}));
    if (norm_bias) {
      SHOAL_ASSIGN_OR_RETURN(*beta, r.Tensor(name + ".bias", {H}));
    }
    return Status::Ok();
  };
  const std::string p = Prefix(w);
  SHOAL_ASSIGN_OR_RETURN(m->embeddings_, r.Tensor(p + "embeddings.tok_embeddings.weight", {config.vocab_size, H}));
  SHOAL_RETURN_IF_ERROR(norm(p + "embeddings.norm", &m->emb_norm_gamma_, &m->emb_norm_beta_));
  m->layers_.resize(config.num_hidden_layers);
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    Layer& L = m->layers_[i];
    const std::string l = p + "layers." + std::to_string(i) + ".";
    if (i > 0) SHOAL_RETURN_IF_ERROR(norm(l + "attn_norm", &L.attn_gamma, &L.attn_beta));
    SHOAL_ASSIGN_OR_RETURN(L.qkv, r.Linear({l + "attn.Wqkv"}, {3 * h}, h));
    SHOAL_ASSIGN_OR_RETURN(L.attn_out, r.Linear({l + "attn.Wo"}, {h}, h));
    SHOAL_RETURN_IF_ERROR(norm(l + "mlp_norm", &L.mlp_gamma, &L.mlp_beta));
    SHOAL_ASSIGN_OR_RETURN(L.wi, r.Linear({l + "mlp.Wi"}, {2 * inter}, h));
    SHOAL_ASSIGN_OR_RETURN(L.wo, r.Linear({l + "mlp.Wo"}, {h}, inter));
    L.global = config.modernbert.global_layers[i];
    m->linear_bytes_ += L.qkv->memory_bytes() + L.attn_out->memory_bytes() + L.wi->memory_bytes() +
                        L.wo->memory_bytes();
    if (progress) progress(static_cast<double>(i + 1) / config.num_hidden_layers);
  }
  SHOAL_RETURN_IF_ERROR(norm(p + "final_norm", &m->final_gamma_, &m->final_beta_));
  if (config.sequence_classifier() || config.token_classifier()) {
    SHOAL_ASSIGN_OR_RETURN(m->head_dense_, r.Linear({"head.dense"}, {h}, h));
    SHOAL_RETURN_IF_ERROR(norm("head.norm", &m->head_gamma_, &m->head_beta_));
    SHOAL_ASSIGN_OR_RETURN(m->classifier_, r.Linear({"classifier"}, {config.num_labels}, h));
    m->linear_bytes_ += m->head_dense_->memory_bytes() + m->classifier_->memory_bytes();
  }
  m->lora_targets_ = LoraTargetsOf(config, w);
  const size_t positions = config.max_tokens();
  m->rope_global_ = RotaryTable(positions, head_dim, config.modernbert.global_rope_theta);
  m->rope_local_ = RotaryTable(positions, head_dim, config.modernbert.local_rope_theta);
  return m;
}

LoraTargets ModernBert::LoraTargetsOf(const EncoderConfig& config, const SafeTensors& weights) {
  const size_t h = config.hidden_size, inter = config.intermediate_size;
  const std::string p = Prefix(weights);
  LoraTargets t;
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string l = p + "layers." + std::to_string(i) + ".";
    t.linears.push_back({l + "attn.Wqkv", h, 3 * h});
    t.linears.push_back({l + "attn.Wo", h, h});
    t.linears.push_back({l + "mlp.Wi", h, 2 * inter});
    t.linears.push_back({l + "mlp.Wo", inter, h});
  }
  return t;
}

size_t ModernBert::memory_bytes() const {
  return (static_cast<size_t>(config_.vocab_size) * config_.hidden_size + rope_global_.size() + rope_local_.size()) *
             sizeof(float) +
         linear_bytes_;
}

void ModernBert::Forward(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                         std::vector<uint32_t>* offsets, int threads) const {
  const size_t H = config_.hidden_size, I = config_.intermediate_size;
  const float eps = config_.layer_norm_eps;
  *offsets = SequenceOffsets(seqs);
  const size_t T = offsets->back();
  std::vector<uint32_t> positions(T);
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (uint32_t j = 0; j < seqs[s].ids.size(); ++j) positions[(*offsets)[s] + j] = j;
  }

  // The residual stream x: token embeddings, normed.
  std::vector<float>& x = *hidden;
  x.resize(T * H);
  size_t row = 0;
  for (const auto& q : seqs) {
    for (int32_t id : q.ids) {
      std::memcpy(x.data() + row++ * H, embeddings_ + static_cast<size_t>(id) * H, H * sizeof(float));
    }
  }
  cpu::LayerNorm(x.data(), nullptr, T, H, emb_norm_gamma_, emb_norm_beta_, eps, threads);

  const int heads = static_cast<int>(config_.num_attention_heads);
  const int head_dim = static_cast<int>(H / heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const std::vector<uint32_t> keys = KeyLimits(seqs);
  const cpu::Activation none = cpu::Activation::kNone;
  // Scratch, written before it is read.
  const std::unique_ptr<float[]> scratch(new float[T * (3 * H + H + H + H + 2 * I + I)]);
  float* qkv = scratch.get();
  float* ctx = qkv + T * 3 * H;
  float* y = ctx + T * H;      // a block's output, added to the stream
  float* normed = y + T * H;   // the stream, normed: a block's input
  float* gated = normed + T * H;  // Wi's output [T, 2I]
  float* act = gated + T * 2 * I;
  // Runs of rows under one adapter; empty for a batch of the base alone.
  std::vector<LoraSegment> lora;
  if (std::any_of(seqs.begin(), seqs.end(), [](const TokenSequence& q) { return q.lora != nullptr; })) {
    for (const TokenSequence& q : seqs) AddLoraRows(&lora, q.ids.size(), q.lora);
  }
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& L = layers_[i];
    const size_t t = i * kLoraPerLayer;  // this layer's first LoRA target
    // Layer 0 reads the stream itself; later layers' input was normed at the
    // end of the layer before.
    const float* in = i == 0 ? x.data() : normed;
    L.qkv->Forward(in, T, qkv, none, threads);
    ApplyLora(lora, t, in, H, qkv, 3 * H, 0, threads);
    // Queries and keys are the first 2H columns: one rotary call as 2·heads heads.
    cpu::Rope(qkv, 3 * H, T, 2 * heads, head_dim, positions.data(),
              L.global ? rope_global_.data() : rope_local_.data(), threads);
    cpu::Attention(qkv, qkv + H, qkv + 2 * H, 3 * H, ctx, *offsets, heads, head_dim, scale, threads,
                   L.global ? 0 : config_.modernbert.local_window, keys);
    L.attn_out->Forward(ctx, T, y, none, threads);
    ApplyLora(lora, t + 1, ctx, H, y, H, 0, threads);
    cpu::ResidualLayerNorm(x.data(), y, normed, T, H, L.mlp_gamma, L.mlp_beta, eps, threads);
    L.wi->Forward(normed, T, gated, none, threads);
    ApplyLora(lora, t + 2, normed, H, gated, 2 * I, 0, threads);
    cpu::GeluMul(gated, T, I, act, threads);
    L.wo->Forward(act, T, y, none, threads);
    ApplyLora(lora, t + 3, act, I, y, H, 0, threads);
    if (i + 1 < layers_.size()) {
      const Layer& next = layers_[i + 1];
      cpu::ResidualLayerNorm(x.data(), y, normed, T, H, next.attn_gamma, next.attn_beta, eps, threads);
    } else {
      cpu::LayerNorm(x.data(), y, T, H, final_gamma_, final_beta_, eps, threads);  // x = final_norm(x + y)
    }
  }
}

void ModernBert::Head(const float* x, size_t rows, float* out, int threads) const {
  std::vector<float> dense(rows * config_.hidden_size);
  head_dense_->Forward(x, rows, dense.data(), ActivationOf(config_.modernbert.classifier_act), threads);
  cpu::LayerNorm(dense.data(), nullptr, rows, config_.hidden_size, head_gamma_, head_beta_, config_.layer_norm_eps,
                 threads);
  classifier_->Forward(dense.data(), rows, out, cpu::Activation::kNone, threads);
}

Status ModernBert::HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                            std::vector<uint32_t>* offsets, int threads) const {
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  Forward(seqs, hidden, offsets, threads);
  return Status::Ok();
}

Status ModernBert::Classify(std::span<const TokenSequence> seqs, float* out, int threads) const {
  if (!config_.sequence_classifier() || !classifier_) {
    return InvalidInput("the model has no sequence-classification head");
  }
  // The head reads the CLS token or the mean of all tokens, as classifier_pooling says.
  const Pooling pooling = config_.modernbert.classifier_mean ? Pooling::kMean : Pooling::kCls;
  std::vector<float> pooled(seqs.size() * config_.hidden_size);
  SHOAL_RETURN_IF_ERROR(Embed(seqs, pooling, /*normalize=*/false, pooled.data(), threads));
  Head(pooled.data(), seqs.size(), out, threads);
  return Status::Ok();
}

Status ModernBert::ClassifyTokens(std::span<const TokenSequence> seqs, float* out, int threads) const {
  if (!config_.token_classifier() || !classifier_) return InvalidInput("the model has no token-classification head");
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  std::vector<float> hidden;
  std::vector<uint32_t> offsets;
  Forward(seqs, &hidden, &offsets, threads);
  Head(hidden.data(), offsets.back(), out, threads);
  return Status::Ok();
}

}  // namespace shoal::native
