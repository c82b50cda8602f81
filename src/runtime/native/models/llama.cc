#include "runtime/native/models/llama.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

struct Llama::Layer {
  const float* attn_norm = nullptr;  // input_layernorm
  const float* mlp_norm = nullptr;   // post_attention_layernorm
  const float* q_norm = nullptr;     // Qwen3 only
  const float* k_norm = nullptr;
  std::unique_ptr<cpu::Linear> qkv;      // [H] → [q_dim + 2·kv_dim]
  std::unique_ptr<cpu::Linear> o;        // [q_dim] → [H]
  std::unique_ptr<cpu::Linear> gate_up;  // [H] → [2·I]
  std::unique_ptr<cpu::Linear> down;     // [I] → [H]
};

namespace {

// Below this many multiply-adds a kernel runs on the calling thread alone:
// a decode step is ~80 small kernels, and each OpenMP fork/join costs tens
// of microseconds — a scheduler time slice when the machine is busy — which
// is more than the work (a 256×768 projection of one row is ~200k).
constexpr size_t kParallelMinWork = size_t{4} << 20;

int ThreadsFor(size_t work, int threads) { return work < kParallelMinWork ? 1 : threads; }

void AddInPlace(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

Llama::~Llama() = default;

Result<std::unique_ptr<Llama>> Llama::Load(const std::string& dir, const DecoderConfig& config,
                                           cpu::Precision precision, uint32_t context, uint32_t kv_blocks,
                                           uint32_t block_tokens, bool with_head,
                                           const std::function<void(double)>& progress) {
  if (block_tokens == 0 || kv_blocks == 0) return InvalidInput("the KV cache needs at least one block");
  std::unique_ptr<Llama> m(new Llama());
  m->config_ = config;
  m->context_ = std::min(context, config.max_position_embeddings);
  m->kv_blocks_ = kv_blocks;
  m->block_tokens_ = block_tokens;
  auto weights = SafeTensors::OpenDir(dir);
  if (!weights.ok()) return weights.status();
  m->weights_ = std::move(weights).value();
  const SafeTensors& w = *m->weights_;
  WeightReader r(w, &m->converted_, precision);

  const size_t H = config.hidden_size, I = config.intermediate_size, V = config.vocab_size;
  const size_t hd = config.head_dim;
  const size_t q_dim = config.num_attention_heads * hd, kv_dim = config.num_key_value_heads * hd;
  // Where the body and the head are: ForCausalLM checkpoints put the body
  // under "model."; a bare model (sentence-transformers' save of an
  // embedder) at the top; a vision-language model its language model under
  // "language_model.model." (LLaVA as the Hub has it) or
  // "model.language_model." (as transformers ≥ 4.52 saves it).
  struct Layout {
    const char* body;
    const char* head;
  };
  constexpr Layout kLayouts[] = {{"model.", "lm_head"},
                                 {"", "lm_head"},
                                 {"language_model.model.", "language_model.lm_head"},
                                 {"model.language_model.", "lm_head"}};
  Layout layout = kLayouts[0];
  for (const Layout& l : kLayouts) {
    if (w.Find(std::string(l.body) + "embed_tokens.weight")) {
      layout = l;
      break;
    }
  }
  const std::string p = layout.body, head = layout.head;
  SHOAL_ASSIGN_OR_RETURN(m->embed_, r.Tensor(p + "embed_tokens.weight", {static_cast<int64_t>(V), static_cast<int64_t>(H)}));
  SHOAL_ASSIGN_OR_RETURN(m->final_norm_, r.Tensor(p + "norm.weight", {static_cast<int64_t>(H)}));
  m->layers_.resize(config.num_hidden_layers);
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    Layer& L = m->layers_[i];
    const std::string l = p + "layers." + std::to_string(i) + ".";
    SHOAL_ASSIGN_OR_RETURN(L.attn_norm, r.Tensor(l + "input_layernorm.weight", {static_cast<int64_t>(H)}));
    SHOAL_ASSIGN_OR_RETURN(L.mlp_norm, r.Tensor(l + "post_attention_layernorm.weight", {static_cast<int64_t>(H)}));
    if (config.qk_norm) {
      SHOAL_ASSIGN_OR_RETURN(L.q_norm, r.Tensor(l + "self_attn.q_norm.weight", {static_cast<int64_t>(hd)}));
      SHOAL_ASSIGN_OR_RETURN(L.k_norm, r.Tensor(l + "self_attn.k_norm.weight", {static_cast<int64_t>(hd)}));
    }
    const std::string a = l + "self_attn.";
    SHOAL_ASSIGN_OR_RETURN(L.qkv, r.Linear({a + "q_proj", a + "k_proj", a + "v_proj"}, {q_dim, kv_dim, kv_dim}, H));
    SHOAL_ASSIGN_OR_RETURN(L.o, r.Linear({a + "o_proj"}, {H}, q_dim));
    SHOAL_ASSIGN_OR_RETURN(L.gate_up, r.Linear({l + "mlp.gate_proj", l + "mlp.up_proj"}, {I, I}, H));
    SHOAL_ASSIGN_OR_RETURN(L.down, r.Linear({l + "mlp.down_proj"}, {H}, I));
    m->weight_bytes_ += L.qkv->memory_bytes() + L.o->memory_bytes() + L.gate_up->memory_bytes() +
                        L.down->memory_bytes() + 2 * H * sizeof(float);
    if (progress) progress(static_cast<double>(i + 1) / (config.num_hidden_layers + 1));
  }
  // The output head: its own weights, or the embedding table (tied).
  if (!with_head) {
    // An embedder: no head to prepare.
  } else if (w.Find(head + ".weight")) {
    SHOAL_ASSIGN_OR_RETURN(m->lm_head_, r.Linear({head}, {V}, H));
  } else if (config.tie_word_embeddings) {
    auto head = cpu::Linear::Create(m->embed_, cpu::WeightLayout::kOutIn, H, V, nullptr, precision);
    if (!head.ok()) return head.status();
    m->lm_head_ = std::move(head).value();
  } else {
    return InvalidInput("weights: no tensor '" + head + ".weight' and tie_word_embeddings is false");
  }
  m->weight_bytes_ += (m->lm_head_ ? m->lm_head_->memory_bytes() : 0) + V * H * sizeof(float);
  m->lora_targets_ = LoraTargetsOf(config);

  // cos/sin per position, from the (scaled) inverse frequencies in double.
  const std::vector<double> inv = RopeInverseFrequencies(config);
  const size_t half = hd / 2;
  m->rope_.resize(static_cast<size_t>(m->context_) * hd);
  for (size_t p = 0; p < m->context_; ++p) {
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inv[i];
      m->rope_[p * hd + i] = static_cast<float>(std::cos(angle));
      m->rope_[p * hd + half + i] = static_cast<float>(std::sin(angle));
    }
  }
  m->kv_floats_ = static_cast<size_t>(config.num_hidden_layers) * 2 * kv_blocks * block_tokens * kv_dim;
  m->kv_ = std::make_unique_for_overwrite<float[]>(m->kv_floats_);
  if (progress) progress(1.0);
  return m;
}

size_t Llama::kv_bytes_per_token() const {
  return static_cast<size_t>(config_.num_hidden_layers) * 2 * config_.num_key_value_heads *
         config_.head_dim * sizeof(float);
}

cpu::KvLayer Llama::KvFor(size_t layer) const {
  const size_t pool = static_cast<size_t>(kv_blocks_) * block_tokens_ * config_.num_key_value_heads *
                      config_.head_dim;
  float* base = kv_.get() + layer * 2 * pool;
  return {base, base + pool, block_tokens_, static_cast<int>(config_.num_key_value_heads),
          static_cast<int>(config_.head_dim)};
}

Status Llama::Check(std::span<const SequenceChunk> chunks) const {
  for (size_t c = 0; c < chunks.size(); ++c) {
    const SequenceChunk& ch = chunks[c];
    const size_t end = ch.start + ch.tokens.size();
    if (ch.tokens.empty()) return InvalidInput("step: chunk " + std::to_string(c) + " has no tokens");
    if (ch.logit_rows > ch.tokens.size()) {
      return InvalidInput("step: chunk " + std::to_string(c) + " asks for more rows of logits than it has tokens");
    }
    if (end > context_) {
      return InvalidInput("step: positions up to " + std::to_string(end) + " exceed the context of " +
                          std::to_string(context_));
    }
    if (ch.blocks.size() * block_tokens_ < end) {
      return InvalidInput("step: chunk " + std::to_string(c) + "'s blocks do not cover its positions");
    }
    for (int32_t b : ch.blocks) {
      if (b < 0 || static_cast<uint32_t>(b) >= kv_blocks_) return InvalidInput("step: block id out of range");
    }
    for (int32_t t : ch.tokens) {
      if (t < 0 || static_cast<uint32_t>(t) >= config_.vocab_size) {
        return InvalidInput("step: token id " + std::to_string(t) + " out of range");
      }
    }
    for (const PlacedEmbeddings& e : ch.embeddings) {
      if (e.rows == nullptr || e.position + e.count > context_) {
        return InvalidInput("step: chunk " + std::to_string(c) + " places embeddings outside its context");
      }
    }
  }
  return Status::Ok();
}

LoraTargets Llama::LoraTargetsOf(const DecoderConfig& config) {
  const size_t H = config.hidden_size, I = config.intermediate_size, hd = config.head_dim;
  const size_t q_dim = config.num_attention_heads * hd, kv_dim = config.num_key_value_heads * hd;
  LoraTargets t;
  for (uint32_t i = 0; i < config.num_hidden_layers; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    for (const auto& [module, in, out] : {std::tuple{"self_attn.q_proj", H, q_dim}, {"self_attn.k_proj", H, kv_dim},
                                          {"self_attn.v_proj", H, kv_dim}, {"self_attn.o_proj", q_dim, H},
                                          {"mlp.gate_proj", H, I}, {"mlp.up_proj", H, I}, {"mlp.down_proj", I, H}}) {
      t.linears.push_back({l + module, in, out});
    }
  }
  return t;
}

Status Llama::RunLayers(std::span<const SequenceChunk> chunks, std::span<const LoraAdapter* const> adapters,
                        std::vector<cpu::AttentionSeq>* seqs_out, int threads) {
  SHOAL_RETURN_IF_ERROR(Check(chunks));
  if (!adapters.empty() && adapters.size() != chunks.size()) return Internal("step: one adapter per chunk");
  const size_t H = config_.hidden_size, I = config_.intermediate_size, hd = config_.head_dim;
  const int heads = static_cast<int>(config_.num_attention_heads);
  const int kv_heads = static_cast<int>(config_.num_key_value_heads);
  const size_t q_dim = heads * hd, kv_dim = kv_heads * hd, ld = q_dim + 2 * kv_dim;
  const float eps = config_.rms_norm_eps;

  // Rows: every new token of every chunk, in chunk order.
  size_t rows = 0;
  for (const SequenceChunk& ch : chunks) rows += ch.tokens.size();
  std::vector<cpu::AttentionSeq>& seqs = *seqs_out;
  seqs.clear();
  seqs.reserve(chunks.size());
  positions_.resize(rows);
  x_.resize(rows * H);
  size_t row = 0;
  for (const SequenceChunk& ch : chunks) {
    seqs.push_back({static_cast<uint32_t>(row), static_cast<uint32_t>(ch.tokens.size()), ch.start, ch.blocks});
    const uint32_t end = ch.start + static_cast<uint32_t>(ch.tokens.size());
    for (size_t t = 0; t < ch.tokens.size(); ++t) {
      positions_[row + t] = ch.start + static_cast<uint32_t>(t);
      std::memcpy(x_.data() + (row + t) * H, embed_ + static_cast<size_t>(ch.tokens[t]) * H, H * sizeof(float));
    }
    // Placed rows (an image's) stand where the chunk reaches them.
    for (const PlacedEmbeddings& e : ch.embeddings) {
      const uint32_t from = std::max(e.position, ch.start), to = std::min(e.position + e.count, end);
      if (from >= to) continue;
      std::memcpy(x_.data() + (row + from - ch.start) * H, e.rows + static_cast<size_t>(from - e.position) * H,
                  static_cast<size_t>(to - from) * H * sizeof(float));
    }
    row += ch.tokens.size();
  }
  // Runs of rows under one adapter; empty when every chunk runs the base.
  std::vector<LoraSegment> lora;
  if (std::any_of(adapters.begin(), adapters.end(), [](const LoraAdapter* a) { return a != nullptr; })) {
    for (size_t c = 0; c < chunks.size(); ++c) AddLoraRows(&lora, chunks[c].tokens.size(), adapters[c]);
  }
  h_.resize(rows * H);
  qkv_.resize(rows * ld);
  attn_.resize(rows * q_dim);
  gate_up_.resize(rows * 2 * I);
  act_.resize(rows * I);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  // Threads per kernel by its work (see kParallelMinWork). Attention's is
  // the query rows times the positions each sees, times the head width.
  size_t attention_work = 0;
  for (const cpu::AttentionSeq& s : seqs) attention_work += s.count * (s.start + s.count) * q_dim * 2;
  const int t_qkv = ThreadsFor(rows * H * ld, threads), t_o = ThreadsFor(rows * q_dim * H, threads);
  const int t_mlp = ThreadsFor(rows * H * I, threads), t_vec = ThreadsFor(rows * I * 64, threads);
  const int t_attn = ThreadsFor(attention_work, threads);

  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& L = layers_[li];
    cpu::RmsNorm(x_.data(), H, h_.data(), H, rows, H, L.attn_norm, eps, t_vec);
    const size_t t = li * kLoraPerLayer;  // this layer's first LoRA target
    L.qkv->Forward(h_.data(), rows, qkv_.data(), cpu::Activation::kNone, t_qkv);
    ApplyLora(lora, t, h_.data(), H, qkv_.data(), ld, 0, t_qkv);
    ApplyLora(lora, t + 1, h_.data(), H, qkv_.data(), ld, q_dim, t_qkv);
    ApplyLora(lora, t + 2, h_.data(), H, qkv_.data(), ld, q_dim + kv_dim, t_qkv);
    if (L.q_norm) {  // Qwen3: every query and key head on its own, v untouched
      for (size_t r = 0; r < rows; ++r) {
        float* q = qkv_.data() + r * ld;
        cpu::RmsNorm(q, hd, q, hd, heads, hd, L.q_norm, eps, 1);
        cpu::RmsNorm(q + q_dim, hd, q + q_dim, hd, kv_heads, hd, L.k_norm, eps, 1);
      }
    }
    cpu::Rope(qkv_.data(), ld, rows, heads, static_cast<int>(hd), positions_.data(), rope_.data(), t_vec);
    cpu::Rope(qkv_.data() + q_dim, ld, rows, kv_heads, static_cast<int>(hd), positions_.data(), rope_.data(),
              t_vec);
    const cpu::KvLayer kv = KvFor(li);
    for (const cpu::AttentionSeq& s : seqs) {
      for (uint32_t t = 0; t < s.count; ++t) {
        const uint32_t pos = s.start + t;
        const size_t slot = (static_cast<size_t>(s.blocks[pos / block_tokens_]) * block_tokens_ +
                             pos % block_tokens_) * kv_dim;
        const float* src = qkv_.data() + (s.row + t) * ld + q_dim;
        std::memcpy(kv.k + slot, src, kv_dim * sizeof(float));
        std::memcpy(kv.v + slot, src + kv_dim, kv_dim * sizeof(float));
      }
    }
    cpu::PagedAttention(qkv_.data(), ld, attn_.data(), q_dim, seqs, kv, heads, scale, !config_.bidirectional,
                        t_attn);
    L.o->Forward(attn_.data(), rows, h_.data(), cpu::Activation::kNone, t_o);
    ApplyLora(lora, t + 3, attn_.data(), q_dim, h_.data(), H, 0, t_o);
    AddInPlace(x_.data(), h_.data(), rows * H);
    cpu::RmsNorm(x_.data(), H, h_.data(), H, rows, H, L.mlp_norm, eps, t_vec);
    L.gate_up->Forward(h_.data(), rows, gate_up_.data(), cpu::Activation::kNone, t_mlp);
    ApplyLora(lora, t + 4, h_.data(), H, gate_up_.data(), 2 * I, 0, t_mlp);
    ApplyLora(lora, t + 5, h_.data(), H, gate_up_.data(), 2 * I, I, t_mlp);
    cpu::SiluMul(gate_up_.data(), rows, I, act_.data(), t_vec);
    L.down->Forward(act_.data(), rows, h_.data(), cpu::Activation::kNone, t_mlp);
    ApplyLora(lora, t + 6, act_.data(), I, h_.data(), H, 0, t_mlp);
    AddInPlace(x_.data(), h_.data(), rows * H);
  }
  return Status::Ok();
}

Status Llama::Step(std::span<const SequenceChunk> chunks, std::span<const LoraAdapter* const> adapters,
                   float* logits, int threads) {
  if (!lm_head_) return InvalidInput("step: this model was loaded without an output head (an embedder)");
  std::vector<cpu::AttentionSeq> seqs;
  SHOAL_RETURN_IF_ERROR(RunLayers(chunks, adapters, &seqs, threads));
  const size_t H = config_.hidden_size;
  const float eps = config_.rms_norm_eps;
  // The head runs on the last logit_rows rows of each chunk.
  size_t wanted = 0;
  for (const SequenceChunk& ch : chunks) wanted += ch.logit_rows;
  last_.resize(wanted * H);
  size_t out = 0;
  for (const cpu::AttentionSeq& s : seqs) {
    const uint32_t n = chunks[&s - seqs.data()].logit_rows;
    cpu::RmsNorm(x_.data() + (s.row + s.count - n) * H, H, last_.data() + out * H, H, n, H, final_norm_, eps, 1);
    out += n;
  }
  if (wanted > 0) {
    lm_head_->Forward(last_.data(), wanted, logits, cpu::Activation::kNone,
                      ThreadsFor(wanted * H * config_.vocab_size, threads));
  }
  return Status::Ok();
}

Status Llama::PooledHiddenStates(std::span<const SequenceChunk> chunks, Pooling pooling, float* out, int threads) {
  if (config_.bidirectional) {
    for (const SequenceChunk& ch : chunks) {
      if (ch.start != 0) return InvalidInput("a bidirectional network runs whole sequences (a chunk starts at 0)");
    }
  }
  std::vector<cpu::AttentionSeq> seqs;
  SHOAL_RETURN_IF_ERROR(RunLayers(chunks, {}, &seqs, threads));
  const size_t H = config_.hidden_size;
  for (size_t c = 0; c < seqs.size(); ++c) {
    const cpu::AttentionSeq& s = seqs[c];
    float* v = out + c * H;
    if (pooling != Pooling::kMean) {
      const size_t row = pooling == Pooling::kCls ? s.row : s.row + s.count - 1;
      cpu::RmsNorm(x_.data() + row * H, H, v, H, 1, H, final_norm_, config_.rms_norm_eps, 1);
      continue;
    }
    // The norm of every row (h_ is free after the layers), then their mean.
    cpu::RmsNorm(x_.data() + s.row * H, H, h_.data(), H, s.count, H, final_norm_, config_.rms_norm_eps, 1);
    std::fill_n(v, H, 0.0f);
    for (uint32_t r = 0; r < s.count; ++r) AddInPlace(v, h_.data() + r * H, H);
    const float inv = 1.0f / static_cast<float>(s.count);
    for (size_t k = 0; k < H; ++k) v[k] *= inv;
  }
  return Status::Ok();
}

}  // namespace shoal::native
