#include "runtime/native/models/vision_transformer.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "runtime/native/loaders/config_fields.h"
#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

using nlohmann::json;

namespace {

// The checkpoint's names for one family's tensors.
struct VisionNames {
  std::string body;  // "vision_model." / "vit."
  std::string patch, class_token, positions, pre_norm, final_norm, head;
  BlockNames blocks;
};

VisionNames NamesOf(VisionConfig::Family f, const std::string& prefix) {
  const std::string body = prefix + "vision_model.";
  if (f == VisionConfig::Family::kSiglip) {
    return {body, "embeddings.patch_embedding", "", "embeddings.position_embedding.weight", "",
            "post_layernorm", "head.", ClipBlockNames(body)};
  }
  if (f == VisionConfig::Family::kClip) {
    return {body, "embeddings.patch_embedding", "embeddings.class_embedding",
            "embeddings.position_embedding.weight", "pre_layrnorm", "post_layernorm", "visual_projection",
            ClipBlockNames(body)};
  }
  return {"vit.", "embeddings.patch_embeddings.projection", "embeddings.cls_token", "embeddings.position_embeddings",
          "", "layernorm", "classifier",
          {"vit.encoder.layer.", "layernorm_before", "attention.attention.query", "attention.attention.key",
           "attention.attention.value", "attention.output.dense", "layernorm_after", "intermediate.dense",
           "output.dense"}};
}

// Each family's defaults, as its transformers config class has them.
struct TowerDefaults {
  uint32_t hidden = 768, inter = 3072, heads = 12, layers = 12, image = 224, patch = 16;
  std::string act = "gelu";
  double eps = 1e-12;
};

TowerDefaults DefaultsOf(VisionConfig::Family f) {
  TowerDefaults d;
  if (f == VisionConfig::Family::kClip) d.patch = 32, d.act = "quick_gelu", d.eps = 1e-5;
  if (f == VisionConfig::Family::kSiglip) d.act = "gelu_pytorch_tanh", d.eps = 1e-6;
  return d;
}

// The tower's shape from `b` (config.json's body or its vision_config).
Status ReadTowerFields(const json& b, const std::string& where, const TowerDefaults& d, VisionConfig* v) {
  SHOAL_ASSIGN_OR_RETURN(v->hidden_size, ConfigCount(b, where, "hidden_size", d.hidden));
  SHOAL_ASSIGN_OR_RETURN(v->intermediate_size, ConfigCount(b, where, "intermediate_size", d.inter));
  SHOAL_ASSIGN_OR_RETURN(v->num_attention_heads, ConfigCount(b, where, "num_attention_heads", d.heads));
  SHOAL_ASSIGN_OR_RETURN(v->num_hidden_layers, ConfigCount(b, where, "num_hidden_layers", d.layers));
  SHOAL_ASSIGN_OR_RETURN(v->image_size, ConfigCount(b, where, "image_size", d.image));
  SHOAL_ASSIGN_OR_RETURN(v->patch_size, ConfigCount(b, where, "patch_size", d.patch));
  SHOAL_ASSIGN_OR_RETURN(v->num_channels, ConfigCount(b, where, "num_channels", 3));
  SHOAL_ASSIGN_OR_RETURN(const std::string act, ConfigString(b, where, "hidden_act", d.act));
  SHOAL_ASSIGN_OR_RETURN(v->act, ParseBlockActivation(act, where + "hidden_act"));
  SHOAL_ASSIGN_OR_RETURN(const double eps, ConfigNumber(b, where, "layer_norm_eps", d.eps));
  v->layer_norm_eps = static_cast<float>(eps);
  if (v->image_size % v->patch_size != 0) {
    return ConfigError(where + "image_size", std::to_string(v->image_size) + " is not a multiple of patch_size " +
                                                 std::to_string(v->patch_size));
  }
  if (v->hidden_size % v->num_attention_heads != 0) {
    return ConfigError(where + "hidden_size", "not a multiple of num_attention_heads");
  }
  return Status::Ok();
}

}  // namespace

Result<VisionConfig> VisionConfig::FeatureTower(const json& vc, const std::string& where, int64_t feature_layer,
                                                bool drop_class_token) {
  if (!vc.is_object()) return ConfigError(where, "expected the vision tower's config (an object)");
  const std::string type = vc.value("model_type", "");
  VisionConfig v;
  if (type == "clip_vision_model") {
    v.family = Family::kClip;
  } else if (type == "siglip_vision_model") {
    v.family = Family::kSiglip;
  } else {
    return ConfigError(where + "model_type", "'" + type +
                                                 "' is not a vision tower Shoal runs natively (clip_vision_model, "
                                                 "siglip_vision_model)");
  }
  SHOAL_RETURN_IF_ERROR(ReadTowerFields(vc, where, DefaultsOf(v.family), &v));
  const int64_t layers = v.num_hidden_layers;
  const int64_t run = feature_layer < 0 ? layers + 1 + feature_layer : feature_layer;
  if (run < 0 || run > layers) {
    return ConfigError("vision_feature_layer", std::to_string(feature_layer) + " is not a layer of the tower's " +
                                                   std::to_string(layers));
  }
  if (drop_class_token && !v.class_token()) {
    return ConfigError("vision_feature_select_strategy", "\"default\" drops a class token; SigLIP's tower has none");
  }
  v.num_hidden_layers = static_cast<uint32_t>(run);
  v.features_only = true;
  v.drop_class_token = drop_class_token;
  return v;
}

Result<VisionConfig> VisionConfig::FromJson(const json& c) {
  if (!c.is_object()) return InvalidInput("config.json: expected a JSON object");
  const std::string arch = ConfigArchitecture(c);
  VisionConfig v;
  const json* body = &c;
  std::string where;
  // A two-tower model keeps its image tower's fields in vision_config; a
  // vision-only class keeps them at the top.
  auto vision_config = [&](const std::string& two_towers) -> Status {
    if (arch != two_towers) return Status::Ok();
    if (!c.contains("vision_config") || !c["vision_config"].is_object()) {
      return ConfigError("vision_config", "a " + two_towers + " needs its vision_config");
    }
    body = &c["vision_config"];
    where = "vision_config.";
    return Status::Ok();
  };
  if (arch == "CLIPModel" || arch == "CLIPVisionModelWithProjection") {
    v.family = Family::kClip;
    SHOAL_RETURN_IF_ERROR(vision_config("CLIPModel"));
    SHOAL_ASSIGN_OR_RETURN(v.projection_dim, ConfigCount(c, "", "projection_dim", 512));  // top level in both
  } else if (arch == "SiglipModel" || arch == "SiglipVisionModel") {
    v.family = Family::kSiglip;
    SHOAL_RETURN_IF_ERROR(vision_config("SiglipModel"));
    if (body->contains("vision_use_head") && (*body)["vision_use_head"] != true) {
      return ConfigError(where + "vision_use_head", "only true (the pooling head gives the embedding)");
    }
  } else if (arch == "ViTForImageClassification") {
    v.family = Family::kVit;
    if (c.contains("qkv_bias") && c["qkv_bias"] != true) return ConfigError("qkv_bias", "only true is supported");
    if (!c.contains("id2label") || !c["id2label"].is_object() || c["id2label"].empty()) {
      return ConfigError("id2label", "a classifier needs its labels");
    }
    v.labels.resize(c["id2label"].size());
    for (const auto& [id, label] : c["id2label"].items()) {
      size_t n = 0;
      const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
      if (ec != std::errc() || end != id.data() + id.size() || n >= v.labels.size() || !label.is_string()) {
        return ConfigError("id2label", "expected ids 0.." + std::to_string(v.labels.size() - 1) + " with names");
      }
      v.labels[n] = label.get<std::string>();
    }
    v.multi_label = c.contains("problem_type") && c["problem_type"] == "multi_label_classification";
  } else {
    return ConfigError("architectures", "'" + arch +
                                            "' is not an image model Shoal runs natively (CLIPModel, "
                                            "CLIPVisionModelWithProjection, SiglipModel, SiglipVisionModel, "
                                            "ViTForImageClassification)");
  }
  SHOAL_RETURN_IF_ERROR(ReadTowerFields(*body, where, DefaultsOf(v.family), &v));
  return v;
}

VisionTransformer::~VisionTransformer() = default;

Result<std::unique_ptr<VisionTransformer>> VisionTransformer::Load(const std::string& dir,
                                                                   const VisionConfig& config,
                                                                   cpu::Precision precision,
                                                                   const std::function<void(double)>& progress) {
  std::unique_ptr<VisionTransformer> m(new VisionTransformer());
  m->config_ = config;
  SHOAL_ASSIGN_OR_RETURN(m->weights_, SafeTensors::OpenDir(dir));
  WeightReader r(*m->weights_, &m->converted_, precision);
  const VisionNames n = NamesOf(config.family, config.prefix);
  const bool clip = config.family == VisionConfig::Family::kClip;
  const bool siglip = config.family == VisionConfig::Family::kSiglip;
  const int64_t H = config.hidden_size, C = config.num_channels, P = config.patch_size;
  const size_t h = config.hidden_size, inter = config.intermediate_size;
  const std::string b = n.body;
  auto norm = [&](const std::string& name, const float** gamma, const float** beta) -> Status {
    SHOAL_ASSIGN_OR_RETURN(*gamma, r.Tensor(name + ".weight", {H}));
    SHOAL_ASSIGN_OR_RETURN(*beta, r.Tensor(name + ".bias", {H}));
    return Status::Ok();
  };
  SHOAL_ASSIGN_OR_RETURN(const float* kernel, r.Tensor(b + n.patch + ".weight", {H, C, P, P}));
  const float* patch_bias = nullptr;
  if (!clip) {
    SHOAL_ASSIGN_OR_RETURN(patch_bias, r.Tensor(b + n.patch + ".bias", {H}));
  }
  SHOAL_ASSIGN_OR_RETURN(m->patch_, cpu::Linear::Create(kernel, cpu::WeightLayout::kOutIn, C * P * P, h,
                                                        patch_bias, precision));
  // CLIP and SigLIP keep an nn.Embedding of positions, ViT a [1, positions, H] parameter.
  const int64_t rows = config.positions();
  SHOAL_ASSIGN_OR_RETURN(m->positions_, config.family == VisionConfig::Family::kVit
                                            ? r.Tensor(b + n.positions, {1, rows, H})
                                            : r.Tensor(b + n.positions, {rows, H}));
  if (config.class_token()) {
    SHOAL_ASSIGN_OR_RETURN(m->class_embedding_,
                           clip ? r.Tensor(b + n.class_token, {H}) : r.Tensor(b + n.class_token, {1, 1, H}));
  }
  if (clip) SHOAL_RETURN_IF_ERROR(norm(b + n.pre_norm, &m->pre_norm_gamma_, &m->pre_norm_beta_));
  // A feature tower's states are read before any final norm or head.
  if (!config.features_only) {
    SHOAL_RETURN_IF_ERROR(norm(b + n.final_norm, &m->final_norm_gamma_, &m->final_norm_beta_));
    if (siglip) {
      SHOAL_ASSIGN_OR_RETURN(m->pooling_, AttentionPoolingHead::Load(r, b + n.head, h, inter,
                                                                     static_cast<int>(config.num_attention_heads),
                                                                     config.layer_norm_eps, precision));
    } else if (clip) {
      SHOAL_ASSIGN_OR_RETURN(const float* proj,
                             r.Tensor(config.prefix + n.head + ".weight", {config.projection_dim, H}));
      SHOAL_ASSIGN_OR_RETURN(m->head_, cpu::Linear::Create(proj, cpu::WeightLayout::kOutIn, h,
                                                           config.projection_dim, nullptr, precision));
    } else {
      SHOAL_ASSIGN_OR_RETURN(m->head_, r.Linear({n.head}, {config.labels.size()}, h));
    }
  }
  const BlockShape shape{h, inter, config.num_hidden_layers, static_cast<int>(config.num_attention_heads),
                         config.act, config.layer_norm_eps};
  SHOAL_ASSIGN_OR_RETURN(m->blocks_, PreNormBlocks::Load(r, n.blocks, shape, progress));
  m->linear_bytes_ = m->blocks_->memory_bytes() + m->patch_->memory_bytes() +
                     (m->head_ ? m->head_->memory_bytes() : 0) + (m->pooling_ ? m->pooling_->memory_bytes() : 0);
  return m;
}

size_t VisionTransformer::output_dim() const {
  switch (config_.family) {
    case VisionConfig::Family::kClip: return config_.projection_dim;
    case VisionConfig::Family::kSiglip: return config_.hidden_size;
    case VisionConfig::Family::kVit: return config_.labels.size();
  }
  return 0;
}

size_t VisionTransformer::memory_bytes() const {
  return (static_cast<size_t>(config_.positions() + 1) * config_.hidden_size) * sizeof(float) + linear_bytes_;
}

Status VisionTransformer::RunBlocks(std::span<const image::PixelValues> images, std::vector<float>* out_x,
                                    std::vector<uint32_t>* offsets, int threads) const {
  const VisionConfig& c = config_;
  const size_t side = c.image_size, P = c.patch_size, grid = side / P, C = c.num_channels;
  for (size_t i = 0; i < images.size(); ++i) {
    const image::PixelValues& px = images[i];
    if (px.width != side || px.height != side || px.chw.size() != C * side * side) {
      return InvalidInput("images[" + std::to_string(i) + "]: " + std::to_string(px.width) + " × " +
                          std::to_string(px.height) + " pixel values; the model takes " + std::to_string(side) +
                          " × " + std::to_string(side));
    }
  }
  const size_t B = images.size(), N = grid * grid, S = c.positions(), T = B * S;
  const size_t H = c.hidden_size, K = C * P * P;
  const cpu::Activation none = cpu::Activation::kNone;

  // Patches as rows of C·P·P pixels (the convolution's kernel order: channel,
  // row, column), through the patch matrix.
  std::vector<float> cols(B * N * K), patches(B * N * H);
  for (size_t b = 0; b < B; ++b) {
    const float* px = images[b].chw.data();
    for (size_t gy = 0; gy < grid; ++gy) {
      for (size_t gx = 0; gx < grid; ++gx) {
        float* row = &cols[((b * N) + gy * grid + gx) * K];
        for (size_t ch = 0; ch < C; ++ch) {
          for (size_t py = 0; py < P; ++py) {
            std::memcpy(row + (ch * P + py) * P, px + (ch * side + gy * P + py) * side + gx * P, P * sizeof(float));
          }
        }
      }
    }
  }
  patch_->Forward(cols.data(), B * N, patches.data(), none, threads);

  // Each image: its class token (not SigLIP's), then its patches, plus the
  // position table.
  std::vector<float>& x = *out_x;
  x.assign(T * H, 0.0f);
  for (size_t b = 0; b < B; ++b) {
    float* seq = &x[b * S * H];
    if (class_embedding_) std::memcpy(seq, class_embedding_, H * sizeof(float));
    std::memcpy(seq + (S - N) * H, &patches[b * N * H], N * H * sizeof(float));
    for (size_t k = 0; k < S * H; ++k) seq[k] += positions_[k];
  }
  if (pre_norm_gamma_) {
    cpu::LayerNorm(x.data(), nullptr, T, H, pre_norm_gamma_, pre_norm_beta_, c.layer_norm_eps, threads);
  }
  offsets->resize(B + 1);
  for (size_t b = 0; b <= B; ++b) (*offsets)[b] = static_cast<uint32_t>(b * S);
  blocks_->Forward(x.data(), *offsets, /*causal=*/false, threads);
  return Status::Ok();
}

Status VisionTransformer::Features(std::span<const image::PixelValues> images, std::vector<float>* out,
                                   int threads) const {
  if (!config_.features_only) return InvalidInput("Features: this tower is not a vision-language model's");
  std::vector<float> x;
  std::vector<uint32_t> offsets;
  SHOAL_RETURN_IF_ERROR(RunBlocks(images, &x, &offsets, threads));
  const size_t H = config_.hidden_size, S = config_.positions(), F = config_.feature_positions();
  out->resize(images.size() * F * H);
  for (size_t b = 0; b < images.size(); ++b) {
    std::memcpy(out->data() + b * F * H, &x[(b * S + (S - F)) * H], F * H * sizeof(float));
  }
  return Status::Ok();
}

Status VisionTransformer::Forward(std::span<const image::PixelValues> images, std::vector<float>* out,
                                  int threads) const {
  if (config_.features_only) return InvalidInput("Forward: a vision-language model's tower has no head");
  std::vector<float> x;
  std::vector<uint32_t> offsets;
  SHOAL_RETURN_IF_ERROR(RunBlocks(images, &x, &offsets, threads));
  const VisionConfig& c = config_;
  const size_t B = images.size(), S = c.positions(), T = B * S, H = c.hidden_size;
  const float eps = c.layer_norm_eps;
  const cpu::Activation none = cpu::Activation::kNone;
  out->resize(B * output_dim());
  if (pooling_) {  // SigLIP: every row normalized, then pooled by the head
    cpu::LayerNorm(x.data(), nullptr, T, H, final_norm_gamma_, final_norm_beta_, eps, threads);
    pooling_->Forward(x.data(), offsets, out->data(), threads);
    return Status::Ok();
  }
  // The class tokens: normalized (post_layernorm, or ViT's final LayerNorm,
  // which is per row), then the projection or the classifier.
  std::vector<float> cls(B * H);
  for (size_t b = 0; b < B; ++b) std::memcpy(&cls[b * H], &x[b * S * H], H * sizeof(float));
  cpu::LayerNorm(cls.data(), nullptr, B, H, final_norm_gamma_, final_norm_beta_, eps, threads);
  head_->Forward(cls.data(), B, out->data(), none, threads);
  return Status::Ok();
}

}  // namespace shoal::native
