#include "runtime/native/models/nomic_bert.h"

#include <cmath>
#include <cstring>

#include "runtime/native/kernels/cpu/decoder_kernels.h"
#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

struct NomicBert::Layer {
  std::unique_ptr<cpu::Linear> qkv;       // Wqkv: [H] → [3H]
  std::unique_ptr<cpu::Linear> out_proj;  // [H] → [H]
  const float* norm1_gamma = nullptr;
  const float* norm1_beta = nullptr;
  std::unique_ptr<cpu::Linear> gate_up;   // fc12 | fc11: [H] → [2I], the gate first (cpu::SiluMul's order)
  std::unique_ptr<cpu::Linear> fc2;       // [I] → [H]
  const float* norm2_gamma = nullptr;
  const float* norm2_beta = nullptr;
};

NomicBert::~NomicBert() = default;

Result<std::unique_ptr<NomicBert>> NomicBert::Load(const std::string& dir, const EncoderConfig& config,
                                                   cpu::Precision precision,
                                                   const std::function<void(double)>& progress) {
  if (!config.is_nomic_bert()) return InvalidInput(dir + ": not a NomicBERT config (model_type nomic_bert)");
  std::unique_ptr<NomicBert> m(new NomicBert());
  m->config_ = config;
  SHOAL_ASSIGN_OR_RETURN(m->weights_, SafeTensors::OpenDir(dir));
  const SafeTensors& w = *m->weights_;
  WeightReader r(w, &m->converted_, precision);
  const int64_t H = config.hidden_size;
  const size_t h = config.hidden_size, inter = config.intermediate_size;
  auto norm = [&](const std::string& name, const float** gamma, const float** beta) -> Status {
    SHOAL_ASSIGN_OR_RETURN(*gamma, r.Tensor(name + ".weight", {H}));
    SHOAL_ASSIGN_OR_RETURN(*beta, r.Tensor(name + ".bias", {H}));
    return Status::Ok();
  };
  SHOAL_ASSIGN_OR_RETURN(m->word_, r.Tensor("embeddings.word_embeddings.weight", {config.vocab_size, H}));
  if (config.type_vocab_size > 0) {
    SHOAL_ASSIGN_OR_RETURN(m->token_type_,
                           r.Tensor("embeddings.token_type_embeddings.weight", {config.type_vocab_size, H}));
  }
  SHOAL_RETURN_IF_ERROR(norm("emb_ln", &m->emb_ln_gamma_, &m->emb_ln_beta_));
  m->layers_.resize(config.num_hidden_layers);
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    Layer& L = m->layers_[i];
    const std::string l = "encoder.layers." + std::to_string(i) + ".";
    SHOAL_ASSIGN_OR_RETURN(L.qkv, r.Linear({l + "attn.Wqkv"}, {3 * h}, h));
    SHOAL_ASSIGN_OR_RETURN(L.out_proj, r.Linear({l + "attn.out_proj"}, {h}, h));
    SHOAL_RETURN_IF_ERROR(norm(l + "norm1", &L.norm1_gamma, &L.norm1_beta));
    SHOAL_ASSIGN_OR_RETURN(L.gate_up, r.Linear({l + "mlp.fc12", l + "mlp.fc11"}, {inter, inter}, h));
    SHOAL_ASSIGN_OR_RETURN(L.fc2, r.Linear({l + "mlp.fc2"}, {h}, inter));
    SHOAL_RETURN_IF_ERROR(norm(l + "norm2", &L.norm2_gamma, &L.norm2_beta));
    m->linear_bytes_ += L.qkv->memory_bytes() + L.out_proj->memory_bytes() + L.gate_up->memory_bytes() +
                        L.fc2->memory_bytes();
    if (progress) progress(static_cast<double>(i + 1) / config.num_hidden_layers);
  }
  m->rope_ = RotaryTable(config.max_tokens(), h / config.num_attention_heads, config.nomic.rotary_base);
  return m;
}

size_t NomicBert::memory_bytes() const {
  return (static_cast<size_t>(config_.vocab_size + config_.type_vocab_size) * config_.hidden_size + rope_.size()) *
             sizeof(float) +
         linear_bytes_;
}

void NomicBert::Forward(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                        std::vector<uint32_t>* offsets, int threads) const {
  const size_t H = config_.hidden_size, I = config_.intermediate_size;
  const float eps = config_.layer_norm_eps;
  *offsets = SequenceOffsets(seqs);
  const size_t T = offsets->back();

  // Embeddings: word + token type, then LayerNorm; positions go in by rotation.
  std::vector<float>& x = *hidden;
  x.resize(T * H);
  std::vector<uint32_t> positions(T);
  size_t row = 0;
  for (const auto& q : seqs) {
    for (size_t j = 0; j < q.ids.size(); ++j, ++row) {
      positions[row] = static_cast<uint32_t>(j);
      const float* w = word_ + static_cast<size_t>(q.ids[j]) * H;
      float* o = x.data() + row * H;
      std::memcpy(o, w, H * sizeof(float));
      if (token_type_) {
        const float* t = token_type_ + (q.type_ids.empty() ? 0 : static_cast<size_t>(q.type_ids[j])) * H;
        for (size_t k = 0; k < H; ++k) o[k] += t[k];
      }
    }
  }
  cpu::LayerNorm(x.data(), nullptr, T, H, emb_ln_gamma_, emb_ln_beta_, eps, threads);

  const int heads = static_cast<int>(config_.num_attention_heads);
  const int head_dim = static_cast<int>(H / heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const std::vector<uint32_t> keys = KeyLimits(seqs);
  const cpu::Activation none = cpu::Activation::kNone;
  // Scratch, written before it is read.
  const std::unique_ptr<float[]> scratch(new float[T * (3 * H + H + H + 2 * I + I)]);
  float* qkv = scratch.get();
  float* ctx = qkv + T * 3 * H;
  float* y = ctx + T * H;       // the attention block's output, normed
  float* gate_up = y + T * H;   // [T, 2I]
  float* act = gate_up + T * 2 * I;
  for (const Layer& L : layers_) {
    L.qkv->Forward(x.data(), T, qkv, none, threads);
    // Queries and keys are the first 2H columns: one rotary call as 2·heads heads.
    cpu::Rope(qkv, 3 * H, T, 2 * heads, head_dim, positions.data(), rope_.data(), threads);
    cpu::Attention(qkv, qkv + H, qkv + 2 * H, 3 * H, ctx, *offsets, heads, head_dim, scale, threads, 0, keys);
    L.out_proj->Forward(ctx, T, y, none, threads);
    cpu::LayerNorm(y, x.data(), T, H, L.norm1_gamma, L.norm1_beta, eps, threads);  // y = norm1(attn + x)
    L.gate_up->Forward(y, T, gate_up, none, threads);
    cpu::SiluMul(gate_up, T, I, act, threads);
    L.fc2->Forward(act, T, x.data(), none, threads);
    cpu::LayerNorm(x.data(), y, T, H, L.norm2_gamma, L.norm2_beta, eps, threads);  // x = norm2(mlp + y)
  }
}

Status NomicBert::HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                               std::vector<uint32_t>* offsets, int threads) const {
  SHOAL_RETURN_IF_ERROR(CheckSequences(config_, seqs));
  Forward(seqs, hidden, offsets, threads);
  return Status::Ok();
}

}  // namespace shoal::native
