#include "runtime/native/models/bert.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

struct Bert::Layer {
  std::unique_ptr<cpu::Linear> qkv;       // query, key, value fused: [H] → [3H]
  std::unique_ptr<cpu::Linear> attn_out;  // [H] → [H]
  std::unique_ptr<cpu::Linear> inter;     // [H] → [I], with the activation (GeGLU: [H] → [2I], gate first)
  std::unique_ptr<cpu::Linear> out;       // [I] → [H]
  const float* ln1_gamma = nullptr;
  const float* ln1_beta = nullptr;
  const float* ln2_gamma = nullptr;
  const float* ln2_beta = nullptr;
};

Bert::~Bert() = default;

namespace {

// Where layer i's modules are: BERT's names, or DistilBERT's or MPNet's for
// the same post-norm layer (q_lin, sa_layer_norm, ffn.lin1; attention.attn.q).
struct LayerNames {
  std::string q, k, v, attn_out, ln1, inter, out, ln2;
};

LayerNames LayerNamesOf(const EncoderConfig& config, const std::string& prefix, uint32_t i) {
  if (config.is_distilbert()) {
    const std::string l = prefix + "transformer.layer." + std::to_string(i) + ".";
    return {l + "attention.q_lin", l + "attention.k_lin", l + "attention.v_lin", l + "attention.out_lin",
            l + "sa_layer_norm",   l + "ffn.lin1",         l + "ffn.lin2",         l + "output_layer_norm"};
  }
  const std::string l = prefix + "encoder.layer." + std::to_string(i) + ".";
  if (config.is_mpnet()) {
    return {l + "attention.attn.q",   l + "attention.attn.k", l + "attention.attn.v", l + "attention.attn.o",
            l + "attention.LayerNorm", l + "intermediate.dense", l + "output.dense", l + "output.LayerNorm"};
  }
  return {l + "attention.self.query", l + "attention.self.key", l + "attention.self.value",
          l + "attention.output.dense", l + "attention.output.LayerNorm", l + "intermediate.dense",
          l + "output.dense", l + "output.LayerNorm"};
}

}  // namespace

Result<std::unique_ptr<Bert>> Bert::Load(const std::string& dir, const EncoderConfig& config,
                                         cpu::Precision precision, const std::function<void(double)>& progress) {
  std::unique_ptr<Bert> m(new Bert());
  m->config_ = config;
  auto weights = SafeTensors::OpenDir(dir);
  if (!weights.ok()) return weights.status();
  m->weights_ = std::move(weights).value();
  const SafeTensors& w = *m->weights_;
  WeightReader r(w, &m->converted_, precision);

  const int64_t H = config.hidden_size;  // tensor shapes
  const int64_t E = config.embedding_width();  // the embedding tables' (ELECTRA's may be narrower)
  const size_t h = config.hidden_size, inter = config.intermediate_size;  // layer sizes
  const std::string p = EncoderWeightPrefix(w);
  const std::string e = p + "embeddings.";
  SHOAL_ASSIGN_OR_RETURN(m->word_, r.Tensor(e + "word_embeddings.weight", {config.vocab_size, E}));
  if (config.is_jina_bert()) {
    m->relative_bias_ = AlibiBias(AlibiSlopes(static_cast<int>(config.num_attention_heads)), config.max_tokens());
  } else {
    if (config.is_mpnet()) {  // a position table and, shared by the layers, a bucketed bias
      SHOAL_ASSIGN_OR_RETURN(const float* buckets,
                             r.Tensor(p + "encoder.relative_attention_bias.weight",
                                      {kMpnetBuckets, static_cast<int64_t>(config.num_attention_heads)}));
      m->relative_bias_ = MpnetBias(buckets, config.num_attention_heads, config.max_tokens());
    }
    SHOAL_ASSIGN_OR_RETURN(m->position_,
                           r.Tensor(e + "position_embeddings.weight", {config.max_position_embeddings, E}));
  }
  if (config.type_vocab_size > 0) {  // DistilBERT has none
    SHOAL_ASSIGN_OR_RETURN(m->token_type_, r.Tensor(e + "token_type_embeddings.weight", {config.type_vocab_size, E}));
  }
  SHOAL_ASSIGN_OR_RETURN(m->emb_ln_gamma_, r.Tensor(e + "LayerNorm.weight", {E}));
  SHOAL_ASSIGN_OR_RETURN(m->emb_ln_beta_, r.Tensor(e + "LayerNorm.bias", {E}));
  if (E != H) {  // ELECTRA's narrower embeddings, mapped up to the layers' width
    SHOAL_ASSIGN_OR_RETURN(m->embeddings_project_, r.Linear({p + "embeddings_project"}, {h}, static_cast<size_t>(E)));
    m->linear_bytes_ += m->embeddings_project_->memory_bytes();
  }

  m->layers_.resize(config.num_hidden_layers);
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    Layer& L = m->layers_[i];
    const LayerNames n = LayerNamesOf(config, p, i);
    SHOAL_ASSIGN_OR_RETURN(L.qkv, r.Linear({n.q, n.k, n.v}, {h, h, h}, h));
    SHOAL_ASSIGN_OR_RETURN(L.attn_out, r.Linear({n.attn_out}, {h}, h));
    SHOAL_ASSIGN_OR_RETURN(L.ln1_gamma, r.Tensor(n.ln1 + ".weight", {H}));
    SHOAL_ASSIGN_OR_RETURN(L.ln1_beta, r.Tensor(n.ln1 + ".bias", {H}));
    if (config.jina.geglu) {  // JinaBERT's gated feed-forward
      const std::string l = p + "encoder.layer." + std::to_string(i) + ".";
      SHOAL_ASSIGN_OR_RETURN(L.inter, r.Linear({l + "mlp.gated_layers"}, {2 * inter}, h));
      SHOAL_ASSIGN_OR_RETURN(L.out, r.Linear({l + "mlp.wo"}, {h}, inter));
      SHOAL_ASSIGN_OR_RETURN(L.ln2_gamma, r.Tensor(l + "mlp.layernorm.weight", {H}));
      SHOAL_ASSIGN_OR_RETURN(L.ln2_beta, r.Tensor(l + "mlp.layernorm.bias", {H}));
    } else {
      SHOAL_ASSIGN_OR_RETURN(L.inter, r.Linear({n.inter}, {inter}, h));
      SHOAL_ASSIGN_OR_RETURN(L.out, r.Linear({n.out}, {h}, inter));
      SHOAL_ASSIGN_OR_RETURN(L.ln2_gamma, r.Tensor(n.ln2 + ".weight", {H}));
      SHOAL_ASSIGN_OR_RETURN(L.ln2_beta, r.Tensor(n.ln2 + ".bias", {H}));
    }
    m->linear_bytes_ += L.qkv->memory_bytes() + L.attn_out->memory_bytes() +
                        L.inter->memory_bytes() + L.out->memory_bytes();
    if (progress) progress(static_cast<double>(i + 1) / config.num_hidden_layers);
  }

  if (config.sequence_classifier()) {
    const uint32_t labels = config.num_labels;
    const ClassifierHeadNames head = FindClassifierHead(w, p);
    SHOAL_ASSIGN_OR_RETURN(m->head_dense_, r.Linear({head.dense}, {h}, h));
    // ELECTRA's head is RoBERTa's layout with GELU (erf) instead of tanh.
    m->head_activation_ = config.is_electra() ? cpu::Activation::kGelu : head.activation;
    SHOAL_ASSIGN_OR_RETURN(m->classifier_, r.Linear({head.out}, {labels}, h));
    m->linear_bytes_ += m->head_dense_->memory_bytes() + m->classifier_->memory_bytes();
  } else if (config.token_classifier()) {
    SHOAL_ASSIGN_OR_RETURN(m->classifier_, r.Linear({"classifier"}, {config.num_labels}, h));
    m->linear_bytes_ += m->classifier_->memory_bytes();
  }
  m->lora_targets_ = LoraTargetsOf(config, w);
  return m;
}

LoraTargets Bert::LoraTargetsOf(const EncoderConfig& config, const SafeTensors& weights) {
  const size_t h = config.hidden_size, inter = config.intermediate_size;
  const std::string p = EncoderWeightPrefix(weights);
  LoraTargets t;
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    const LayerNames n = LayerNamesOf(config, p, i);
    t.linears.push_back({n.q, h, h});
    t.linears.push_back({n.k, h, h});
    t.linears.push_back({n.v, h, h});
    t.linears.push_back({n.attn_out, h, h});
    t.linears.push_back({n.inter, h, inter});
    t.linears.push_back({n.out, inter, h});
  }
  if (config.sequence_classifier()) {
    const ClassifierHeadNames head = FindClassifierHead(weights, p);
    t.replaceable = {{head.dense, h, h}, {head.out, h, config.num_labels}};
  } else if (config.token_classifier()) {
    t.replaceable = {{"classifier", h, config.num_labels}};
  } else if (!config.is_distilbert()) {
    t.unused.push_back(p + "pooler.dense");
  }
  return t;
}

size_t Bert::memory_bytes() const {
  // Embedding tables (mapped or converted) plus the prepared dense layers.
  return (static_cast<size_t>(config_.vocab_size) + (position_ ? config_.max_position_embeddings : 0) +
          config_.type_vocab_size) * config_.embedding_width() * sizeof(float) + linear_bytes_;
}

void Bert::Forward(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                   std::vector<uint32_t>* offsets, int threads) const {
  const size_t H = config_.hidden_size, I = config_.intermediate_size;
  *offsets = SequenceOffsets(seqs);
  const size_t T = offsets->back();

  // Embeddings: word + position (none with ALiBi) + token type, then
  // LayerNorm, at the tables' width E; ELECTRA's narrower ones then projected.
  const size_t E = config_.embedding_width();
  std::vector<float>& x = *hidden;
  std::vector<float> narrow;
  std::vector<float>& emb = E == H ? x : narrow;
  emb.resize(T * E);
  std::vector<int32_t> positions;
  size_t row = 0;
  for (const auto& q : seqs) {
    positions.resize(q.ids.size());
    if (position_) EncoderPositions(config_, q.ids, positions.data());
    for (size_t j = 0; j < q.ids.size(); ++j, ++row) {
      const float* w = word_ + static_cast<size_t>(q.ids[j]) * E;
      float* o = emb.data() + row * E;
      std::memcpy(o, w, E * sizeof(float));
      if (position_) {
        const float* p = position_ + static_cast<size_t>(positions[j]) * E;
        for (size_t k = 0; k < E; ++k) o[k] += p[k];
      }
      if (token_type_) {
        const float* t = token_type_ + (q.type_ids.empty() ? 0 : static_cast<size_t>(q.type_ids[j])) * E;
        for (size_t k = 0; k < E; ++k) o[k] += t[k];
      }
    }
  }
  cpu::LayerNorm(emb.data(), nullptr, T, E, emb_ln_gamma_, emb_ln_beta_, config_.layer_norm_eps, threads);
  if (embeddings_project_) {
    x.resize(T * H);
    embeddings_project_->Forward(emb.data(), T, x.data(), cpu::Activation::kNone, threads);
  }

  const int heads = static_cast<int>(config_.num_attention_heads);
  const int head_dim = static_cast<int>(H / heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const std::vector<uint32_t> keys = KeyLimits(seqs);
  const cpu::Activation act = ActivationOf(config_.hidden_act);
  // Scratch, written before it is read: left uninitialized (a zero fill of
  // every buffer costs about 1 % of a 128-token pass).
  const bool geglu = config_.jina.geglu;
  const std::unique_ptr<float[]> scratch(new float[T * (3 * H + H + H + I + (geglu ? 2 * I : 0))]);
  float* qkv = scratch.get();
  float* ctx = qkv + T * 3 * H;
  float* y = ctx + T * H;
  float* inter = y + T * H;
  float* gated = inter + T * I;  // GeGLU only: [T, 2I]
  // Runs of rows under one adapter; empty for a batch of the base alone.
  std::vector<LoraSegment> lora;
  if (std::any_of(seqs.begin(), seqs.end(), [](const TokenSequence& q) { return q.lora != nullptr; })) {
    for (const TokenSequence& q : seqs) AddLoraRows(&lora, q.ids.size(), q.lora);
  }
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& L = layers_[i];
    const size_t t = i * kLoraPerLayer;  // this layer's first LoRA target
    L.qkv->Forward(x.data(), T, qkv, cpu::Activation::kNone, threads);
    for (size_t k = 0; k < 3; ++k) ApplyLora(lora, t + k, x.data(), H, qkv, 3 * H, k * H, threads);
    cpu::Attention(qkv, qkv + H, qkv + 2 * H, 3 * H, ctx, *offsets, heads, head_dim, scale, threads, 0, keys,
                   relative_bias_.table.empty() ? nullptr : &relative_bias_);
    L.attn_out->Forward(ctx, T, y, cpu::Activation::kNone, threads);
    ApplyLora(lora, t + 3, ctx, H, y, H, 0, threads);
    cpu::LayerNorm(y, x.data(), T, H, L.ln1_gamma, L.ln1_beta, config_.layer_norm_eps, threads);
    if (geglu) {  // no LoRA on JinaBERT (lora_targets() is null)
      L.inter->Forward(y, T, gated, cpu::Activation::kNone, threads);
      cpu::GeluMul(gated, T, I, inter, threads);
    } else if (AnyLora(lora, t + 4)) {  // the update goes in before the activation
      L.inter->Forward(y, T, inter, cpu::Activation::kNone, threads);
      ApplyLora(lora, t + 4, y, H, inter, I, 0, threads);
      cpu::Activate(inter, T * I, act, threads);
    } else {
      L.inter->Forward(y, T, inter, act, threads);
    }
    L.out->Forward(inter, T, x.data(), cpu::Activation::kNone, threads);
    ApplyLora(lora, t + 5, inter, I, x.data(), H, 0, threads);
    cpu::LayerNorm(x.data(), y, T, H, L.ln2_gamma, L.ln2_beta, config_.layer_norm_eps, threads);
  }
}

Status Bert::HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                            std::vector<uint32_t>* offsets, int threads) const {
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  Forward(seqs, hidden, offsets, threads);
  return Status::Ok();
}

Status Bert::Classify(std::span<const TokenSequence> seqs, float* out, int threads) const {
  if (!head_dense_) return InvalidInput("the model has no sequence-classification head");
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  const size_t H = config_.hidden_size;
  std::vector<float> hidden;
  std::vector<uint32_t> offsets;
  Forward(seqs, &hidden, &offsets, threads);
  std::vector<float> first(seqs.size() * H), pooled(seqs.size() * H);
  for (size_t s = 0; s < seqs.size(); ++s) {
    std::memcpy(first.data() + s * H, hidden.data() + static_cast<size_t>(offsets[s]) * H, H * sizeof(float));
  }
  head_dense_->Forward(first.data(), seqs.size(), pooled.data(), head_activation_, threads);
  classifier_->Forward(pooled.data(), seqs.size(), out, cpu::Activation::kNone, threads);
  // Sequences whose adapter brings its own head (modules_to_save) run it
  // instead, one by one: heads are a sliver of the cost.
  const size_t labels = config_.num_labels;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const LoraAdapter* a = seqs[s].lora;
    if (a == nullptr || !a->replaces_any()) continue;
    const cpu::Linear* dense = a->replacement(0) ? a->replacement(0) : head_dense_.get();
    const cpu::Linear* classifier = a->replacement(1) ? a->replacement(1) : classifier_.get();
    dense->Forward(first.data() + s * H, 1, pooled.data() + s * H, head_activation_, threads);
    classifier->Forward(pooled.data() + s * H, 1, out + s * labels, cpu::Activation::kNone, threads);
  }
  return Status::Ok();
}

Status Bert::ClassifyTokens(std::span<const TokenSequence> seqs, float* out, int threads) const {
  if (!classifier_ || head_dense_) return InvalidInput("the model has no token-classification head");
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  std::vector<float> hidden;
  std::vector<uint32_t> offsets;
  Forward(seqs, &hidden, &offsets, threads);
  classifier_->Forward(hidden.data(), offsets.back(), out, cpu::Activation::kNone, threads);
  // An adapter that brings its own classifier (modules_to_save) runs it on
  // its sequences' rows instead.
  const size_t H = config_.hidden_size, labels = config_.num_labels;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const LoraAdapter* a = seqs[s].lora;
    if (a == nullptr || a->replacement(0) == nullptr) continue;
    a->replacement(0)->Forward(hidden.data() + offsets[s] * H, offsets[s + 1] - offsets[s], out + offsets[s] * labels,
                               cpu::Activation::kNone, threads);
  }
  return Status::Ok();
}

}  // namespace shoal::native
