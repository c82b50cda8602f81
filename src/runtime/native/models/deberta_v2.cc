#include "runtime/native/models/deberta_v2.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

struct DebertaV2::Layer {
  std::unique_ptr<cpu::Linear> qkv;  // query_proj | key_proj | value_proj: [H] → [3H]
  std::unique_ptr<cpu::Linear> attn_out;
  const float* ln1_gamma = nullptr;
  const float* ln1_beta = nullptr;
  std::unique_ptr<cpu::Linear> inter;
  std::unique_ptr<cpu::Linear> out;
  const float* ln2_gamma = nullptr;
  const float* ln2_beta = nullptr;
  // The relative embeddings through query_proj | key_proj (with their
  // biases): [2·span, 2H], pos_q in the first H columns, pos_k in the next.
  std::vector<float> positions;
};

DebertaV2::~DebertaV2() = default;

Result<std::unique_ptr<DebertaV2>> DebertaV2::Load(const std::string& dir, const EncoderConfig& config,
                                                   cpu::Precision precision,
                                                   const std::function<void(double)>& progress) {
  if (!config.is_deberta_v2()) return InvalidInput(dir + ": not a DeBERTa-v2 config (model_type deberta-v2)");
  std::unique_ptr<DebertaV2> m(new DebertaV2());
  m->config_ = config;
  SHOAL_ASSIGN_OR_RETURN(m->weights_, SafeTensors::OpenDir(dir));
  const SafeTensors& w = *m->weights_;
  WeightReader r(w, &m->converted_, precision);
  const DebertaV2Config& d = config.deberta;
  const int64_t H = config.hidden_size;
  const size_t h = config.hidden_size;
  auto norm = [&](const std::string& name, const float** gamma, const float** beta) -> Status {
    SHOAL_ASSIGN_OR_RETURN(*gamma, r.Tensor(name + ".weight", {H}));
    SHOAL_ASSIGN_OR_RETURN(*beta, r.Tensor(name + ".bias", {H}));
    return Status::Ok();
  };
  const std::string p = EncoderWeightPrefix(w);
  SHOAL_ASSIGN_OR_RETURN(m->word_, r.Tensor(p + "embeddings.word_embeddings.weight", {config.vocab_size, H}));
  if (d.position_biased_input) {
    SHOAL_ASSIGN_OR_RETURN(m->position_, r.Tensor(p + "embeddings.position_embeddings.weight",
                                                  {config.max_position_embeddings, H}));
  }
  if (config.type_vocab_size > 0) {
    SHOAL_ASSIGN_OR_RETURN(m->token_type_,
                           r.Tensor(p + "embeddings.token_type_embeddings.weight", {config.type_vocab_size, H}));
  }
  SHOAL_RETURN_IF_ERROR(norm(p + "embeddings.LayerNorm", &m->emb_ln_gamma_, &m->emb_ln_beta_));

  // The relative embeddings, normed once (they depend on nothing else).
  const size_t rel_rows = 2 * static_cast<size_t>(d.span());
  std::vector<float> rel;
  if (d.relative()) {
    const float* table = nullptr;
    SHOAL_ASSIGN_OR_RETURN(table, r.Tensor(p + "encoder.rel_embeddings.weight", {static_cast<int64_t>(rel_rows), H}));
    rel.assign(table, table + rel_rows * h);
    if (d.norm_rel_embeddings) {
      const float *gamma = nullptr, *beta = nullptr;
      SHOAL_RETURN_IF_ERROR(norm(p + "encoder.LayerNorm", &gamma, &beta));
      cpu::LayerNorm(rel.data(), nullptr, rel_rows, h, gamma, beta, config.layer_norm_eps, 1);
    }
  }

  m->layers_.resize(config.num_hidden_layers);
  std::vector<float> projected(rel_rows * 3 * h);
  const int load_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    Layer& L = m->layers_[i];
    const std::string l = p + "encoder.layer." + std::to_string(i) + ".";
    const std::string a = l + "attention.";
    SHOAL_ASSIGN_OR_RETURN(L.qkv, r.Linear({a + "self.query_proj", a + "self.key_proj", a + "self.value_proj"},
                                           {h, h, h}, h));
    SHOAL_ASSIGN_OR_RETURN(L.attn_out, r.Linear({a + "output.dense"}, {h}, h));
    SHOAL_RETURN_IF_ERROR(norm(a + "output.LayerNorm", &L.ln1_gamma, &L.ln1_beta));
    SHOAL_ASSIGN_OR_RETURN(L.inter, r.Linear({l + "intermediate.dense"}, {config.intermediate_size}, h));
    SHOAL_ASSIGN_OR_RETURN(L.out, r.Linear({l + "output.dense"}, {h}, config.intermediate_size));
    SHOAL_RETURN_IF_ERROR(norm(l + "output.LayerNorm", &L.ln2_gamma, &L.ln2_beta));
    if (d.relative()) {
      // share_att_key: the layer's own query and key projections, biases included.
      L.qkv->Forward(rel.data(), rel_rows, projected.data(), cpu::Activation::kNone, load_threads);
      L.positions.resize(rel_rows * 2 * h);
      for (size_t row = 0; row < rel_rows; ++row) {
        std::memcpy(&L.positions[row * 2 * h], &projected[row * 3 * h], 2 * h * sizeof(float));
      }
      m->position_bytes_ += L.positions.size() * sizeof(float);
    }
    m->linear_bytes_ += L.qkv->memory_bytes() + L.attn_out->memory_bytes() + L.inter->memory_bytes() +
                        L.out->memory_bytes();
    if (progress) progress(static_cast<double>(i + 1) / config.num_hidden_layers);
  }
  const int64_t max_len = config.max_tokens();
  m->rows_.resize(2 * max_len - 1);
  for (int64_t r_ = -(max_len - 1); r_ < max_len; ++r_) m->rows_[r_ + max_len - 1] = d.RelativeRow(r_);

  if (config.sequence_classifier()) {
    SHOAL_ASSIGN_OR_RETURN(m->pooler_, r.Linear({"pooler.dense"}, {d.pooler_hidden_size}, h));
    SHOAL_ASSIGN_OR_RETURN(m->classifier_, r.Linear({"classifier"}, {config.num_labels}, d.pooler_hidden_size));
    m->linear_bytes_ += m->pooler_->memory_bytes() + m->classifier_->memory_bytes();
  } else if (config.token_classifier()) {
    SHOAL_ASSIGN_OR_RETURN(m->classifier_, r.Linear({"classifier"}, {config.num_labels}, h));
    m->linear_bytes_ += m->classifier_->memory_bytes();
  }
  return m;
}

size_t DebertaV2::memory_bytes() const {
  const size_t tables = config_.vocab_size + (position_ ? config_.max_position_embeddings : 0) +
                        config_.type_vocab_size;
  return tables * config_.hidden_size * sizeof(float) + linear_bytes_ + position_bytes_ +
         rows_.size() * sizeof(int32_t);
}

void DebertaV2::Forward(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                        std::vector<uint32_t>* offsets, int threads) const {
  const size_t H = config_.hidden_size, I = config_.intermediate_size;
  const float eps = config_.layer_norm_eps;
  const DebertaV2Config& d = config_.deberta;
  *offsets = SequenceOffsets(seqs);
  const size_t T = offsets->back();

  // Embeddings: word (+ absolute position, + token type, where the model has
  // them), then LayerNorm.
  std::vector<float>& x = *hidden;
  x.resize(T * H);
  size_t row = 0;
  for (const auto& q : seqs) {
    for (size_t j = 0; j < q.ids.size(); ++j, ++row) {
      float* o = x.data() + row * H;
      std::memcpy(o, word_ + static_cast<size_t>(q.ids[j]) * H, H * sizeof(float));
      if (position_) {
        const float* pe = position_ + j * H;
        for (size_t k = 0; k < H; ++k) o[k] += pe[k];
      }
      if (token_type_) {
        const float* t = token_type_ + (q.type_ids.empty() ? 0 : static_cast<size_t>(q.type_ids[j])) * H;
        for (size_t k = 0; k < H; ++k) o[k] += t[k];
      }
    }
  }
  cpu::LayerNorm(x.data(), nullptr, T, H, emb_ln_gamma_, emb_ln_beta_, eps, threads);

  const int heads = static_cast<int>(config_.num_attention_heads);
  const int head_dim = static_cast<int>(H / heads);
  const int terms = 1 + (d.c2p ? 1 : 0) + (d.p2c ? 1 : 0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim * terms));
  const std::vector<uint32_t> keys = KeyLimits(seqs);
  const cpu::Activation none = cpu::Activation::kNone;
  const cpu::Activation act = ActivationOf(config_.hidden_act);
  // Scratch, written before it is read.
  const std::unique_ptr<float[]> scratch(new float[T * (3 * H + H + H + I)]);
  float* qkv = scratch.get();
  float* ctx = qkv + T * 3 * H;
  float* y = ctx + T * H;  // the attention block's output, normed
  float* inter = y + T * H;
  for (const Layer& L : layers_) {
    L.qkv->Forward(x.data(), T, qkv, none, threads);
    const float* pos = L.positions.data();
    cpu::DisentangledAttention(qkv, qkv + H, qkv + 2 * H, 3 * H, ctx, *offsets, heads, head_dim, scale,
                               d.p2c ? pos : nullptr, d.c2p ? pos + H : nullptr, 2 * H, rows_, threads, keys);
    L.attn_out->Forward(ctx, T, y, none, threads);
    cpu::LayerNorm(y, x.data(), T, H, L.ln1_gamma, L.ln1_beta, eps, threads);  // y = LN(attn + x)
    L.inter->Forward(y, T, inter, act, threads);
    L.out->Forward(inter, T, x.data(), none, threads);
    cpu::LayerNorm(x.data(), y, T, H, L.ln2_gamma, L.ln2_beta, eps, threads);  // x = LN(ffn + y)
  }
}

Status DebertaV2::HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                               std::vector<uint32_t>* offsets, int threads) const {
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  Forward(seqs, hidden, offsets, threads);
  return Status::Ok();
}

Status DebertaV2::Classify(std::span<const TokenSequence> seqs, float* out, int threads) const {
  if (!pooler_) return InvalidInput("the model has no sequence-classification head");
  // ContextPooler: the first token, dense + activation, then the classifier.
  std::vector<float> first(seqs.size() * config_.hidden_size);
  SHOAL_RETURN_IF_ERROR(Embed(seqs, Pooling::kCls, /*normalize=*/false, first.data(), threads));
  std::vector<float> pooled(seqs.size() * config_.deberta.pooler_hidden_size);
  pooler_->Forward(first.data(), seqs.size(), pooled.data(), ActivationOf(config_.deberta.pooler_act), threads);
  classifier_->Forward(pooled.data(), seqs.size(), out, cpu::Activation::kNone, threads);
  return Status::Ok();
}

Status DebertaV2::ClassifyTokens(std::span<const TokenSequence> seqs, float* out, int threads) const {
  if (!config_.token_classifier() || !classifier_) return InvalidInput("the model has no token-classification head");
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  std::vector<float> hidden;
  std::vector<uint32_t> offsets;
  Forward(seqs, &hidden, &offsets, threads);
  classifier_->Forward(hidden.data(), offsets.back(), out, cpu::Activation::kNone, threads);
  return Status::Ok();
}

}  // namespace shoal::native
