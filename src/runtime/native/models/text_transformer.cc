#include "runtime/native/models/text_transformer.h"

#include <algorithm>
#include <cstring>

#include "runtime/native/loaders/config_fields.h"
#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

using nlohmann::json;

bool HasTextTower(const json& config) {
  const std::string arch = ConfigArchitecture(config);
  return arch == "CLIPModel" || arch == "SiglipModel";
}

Result<TextTowerConfig> TextTowerConfig::FromJson(const json& c) {
  if (!c.is_object()) return InvalidInput("config.json: expected a JSON object");
  const std::string arch = ConfigArchitecture(c);
  if (!HasTextTower(c)) {
    return ConfigError("architectures", "'" + arch + "' has no text tower Shoal runs (CLIPModel, SiglipModel)");
  }
  if (!c.contains("text_config") || !c["text_config"].is_object()) {
    return ConfigError("text_config", "a " + arch + " needs its text_config");
  }
  const json& t = c["text_config"];
  const std::string where = "text_config.";
  TextTowerConfig v;
  // Each class's defaults (CLIPTextConfig, SiglipTextConfig).
  uint32_t vocab = 49408, hidden = 512, inter = 2048, heads = 8, positions = 77;
  std::string act = "quick_gelu";
  double eps = 1e-5;
  int64_t eos = 2;
  if (arch == "SiglipModel") {
    v.family = Family::kSiglip;
    vocab = 32000, hidden = 768, inter = 3072, heads = 12, positions = 64;
    act = "gelu_pytorch_tanh", eps = 1e-6, eos = 49407;
  }
  SHOAL_ASSIGN_OR_RETURN(v.vocab_size, ConfigCount(t, where, "vocab_size", vocab));
  SHOAL_ASSIGN_OR_RETURN(v.hidden_size, ConfigCount(t, where, "hidden_size", hidden));
  SHOAL_ASSIGN_OR_RETURN(v.intermediate_size, ConfigCount(t, where, "intermediate_size", inter));
  SHOAL_ASSIGN_OR_RETURN(v.num_attention_heads, ConfigCount(t, where, "num_attention_heads", heads));
  SHOAL_ASSIGN_OR_RETURN(v.num_hidden_layers, ConfigCount(t, where, "num_hidden_layers", 12));
  SHOAL_ASSIGN_OR_RETURN(v.max_position_embeddings, ConfigCount(t, where, "max_position_embeddings", positions));
  SHOAL_ASSIGN_OR_RETURN(act, ConfigString(t, where, "hidden_act", act));
  SHOAL_ASSIGN_OR_RETURN(v.act, ParseBlockActivation(act, where + "hidden_act"));
  SHOAL_ASSIGN_OR_RETURN(eps, ConfigNumber(t, where, "layer_norm_eps", eps));
  v.layer_norm_eps = static_cast<float>(eps);
  SHOAL_ASSIGN_OR_RETURN(const int64_t pad, ConfigInt(t, where, "pad_token_id", 1));
  SHOAL_ASSIGN_OR_RETURN(eos, ConfigInt(t, where, "eos_token_id", eos));
  if (pad < 0 || pad >= v.vocab_size) return ConfigError(where + "pad_token_id", "not an id of the vocabulary");
  v.pad_token_id = static_cast<int32_t>(pad);
  v.eos_token_id = static_cast<int32_t>(eos);
  if (v.family == Family::kClip) {
    SHOAL_ASSIGN_OR_RETURN(v.projection_dim, ConfigCount(c, "", "projection_dim", 512));  // shared with the image tower
  } else {
    SHOAL_ASSIGN_OR_RETURN(v.projection_dim, ConfigCount(t, where, "projection_size", v.hidden_size));
  }
  if (v.hidden_size % v.num_attention_heads != 0) {
    return ConfigError(where + "hidden_size", "not a multiple of num_attention_heads");
  }
  return v;
}

TextTransformer::~TextTransformer() = default;

Result<std::unique_ptr<TextTransformer>> TextTransformer::Load(const std::string& dir, const TextTowerConfig& config,
                                                               cpu::Precision precision,
                                                               const std::function<void(double)>& progress) {
  std::unique_ptr<TextTransformer> m(new TextTransformer());
  m->config_ = config;
  SHOAL_ASSIGN_OR_RETURN(m->weights_, SafeTensors::OpenDir(dir));
  WeightReader r(*m->weights_, &m->converted_, precision);
  const int64_t H = config.hidden_size;
  const size_t h = config.hidden_size;
  const std::string b = "text_model.";
  SHOAL_ASSIGN_OR_RETURN(m->tokens_, r.Tensor(b + "embeddings.token_embedding.weight", {config.vocab_size, H}));
  SHOAL_ASSIGN_OR_RETURN(m->positions_,
                         r.Tensor(b + "embeddings.position_embedding.weight", {config.max_position_embeddings, H}));
  SHOAL_ASSIGN_OR_RETURN(m->final_gamma_, r.Tensor(b + "final_layer_norm.weight", {H}));
  SHOAL_ASSIGN_OR_RETURN(m->final_beta_, r.Tensor(b + "final_layer_norm.bias", {H}));
  if (config.family == TextTowerConfig::Family::kClip) {
    SHOAL_ASSIGN_OR_RETURN(const float* proj, r.Tensor("text_projection.weight", {config.projection_dim, H}));
    SHOAL_ASSIGN_OR_RETURN(m->projection_, cpu::Linear::Create(proj, cpu::WeightLayout::kOutIn, h,
                                                               config.projection_dim, nullptr, precision));
  } else {
    SHOAL_ASSIGN_OR_RETURN(m->projection_, r.Linear({b + "head"}, {config.projection_dim}, h));
  }
  const BlockShape shape{h, config.intermediate_size, config.num_hidden_layers,
                         static_cast<int>(config.num_attention_heads), config.act, config.layer_norm_eps};
  SHOAL_ASSIGN_OR_RETURN(m->blocks_, PreNormBlocks::Load(r, ClipBlockNames(b), shape, progress));
  m->bytes_ = m->blocks_->memory_bytes() + m->projection_->memory_bytes() +
              (static_cast<size_t>(config.vocab_size) + config.max_position_embeddings + 2) * h * sizeof(float);
  return m;
}

size_t TextTransformer::PooledRow(std::span<const int32_t> ids) const {
  if (config_.eos_token_id == 2) {  // the legacy configs: the largest id's first row
    return static_cast<size_t>(std::max_element(ids.begin(), ids.end()) - ids.begin());
  }
  const auto eos = std::find(ids.begin(), ids.end(), config_.eos_token_id);
  return eos == ids.end() ? 0 : static_cast<size_t>(eos - ids.begin());  // torch's argmax of all-zero: 0
}

Status TextTransformer::Forward(std::span<const std::vector<int32_t>> sequences, std::vector<float>* out,
                                int threads) const {
  const TextTowerConfig& c = config_;
  const size_t H = c.hidden_size, B = sequences.size(), limit = c.max_position_embeddings;
  const bool padded = c.family == TextTowerConfig::Family::kSiglip;
  std::vector<uint32_t> offsets(B + 1, 0);
  for (size_t s = 0; s < B; ++s) {
    const size_t n = sequences[s].size();
    if (n == 0 || n > limit) {
      return InvalidInput("sequences[" + std::to_string(s) + "]: " + std::to_string(n) + " tokens; the text tower takes 1 to " +
                          std::to_string(limit));
    }
    for (int32_t id : sequences[s]) {
      if (id < 0 || static_cast<uint32_t>(id) >= c.vocab_size) {
        return InvalidInput("sequences[" + std::to_string(s) + "]: token id " + std::to_string(id) +
                            " is outside the vocabulary");
      }
    }
    offsets[s + 1] = offsets[s] + static_cast<uint32_t>(padded ? limit : n);
  }
  // Embeddings: token + position, pad tokens after a SigLIP text.
  std::vector<float> x(static_cast<size_t>(offsets[B]) * H);
  for (size_t s = 0; s < B; ++s) {
    const size_t rows = offsets[s + 1] - offsets[s];
    for (size_t i = 0; i < rows; ++i) {
      const int32_t id = i < sequences[s].size() ? sequences[s][i] : c.pad_token_id;
      float* row = &x[(offsets[s] + i) * H];
      const float* token = tokens_ + static_cast<size_t>(id) * H;
      const float* position = positions_ + i * H;
      for (size_t k = 0; k < H; ++k) row[k] = token[k] + position[k];
    }
  }
  blocks_->Forward(x.data(), offsets, c.causal(), threads);
  // The pooled rows, normalized (final_layer_norm is per row), projected.
  std::vector<float> pooled(B * H);
  for (size_t s = 0; s < B; ++s) {
    const size_t row = padded ? limit - 1 : PooledRow(sequences[s]);
    std::memcpy(&pooled[s * H], &x[(offsets[s] + row) * H], H * sizeof(float));
  }
  cpu::LayerNorm(pooled.data(), nullptr, B, H, final_gamma_, final_beta_, c.layer_norm_eps, threads);
  out->resize(B * c.projection_dim);
  projection_->Forward(pooled.data(), B, out->data(), cpu::Activation::kNone, threads);
  return Status::Ok();
}

}  // namespace shoal::native
