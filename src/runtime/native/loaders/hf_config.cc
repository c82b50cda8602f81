#include "runtime/native/loaders/hf_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/native/loaders/model_types.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

Result<nlohmann::json> ReadJson(const fs::path& path) { return ReadJsonFile(path.string()); }

// id2label ({"0": "O", "1": "B-PER", ...}) as a list, one name per label;
// ids it leaves out are named as transformers names them ("LABEL_<i>").
Status ReadLabels(const nlohmann::json& j, const std::string& path, EncoderConfig* c) {
  c->labels.clear();
  for (uint32_t i = 0; i < c->num_labels; ++i) c->labels.push_back("LABEL_" + std::to_string(i));
  auto it = j.find("id2label");
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return InvalidInput(path + ": id2label: expected an object of label names");
  for (auto e = it->begin(); e != it->end(); ++e) {
    uint32_t id = 0;
    const std::string& key = e.key();
    if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos ||
        (id = static_cast<uint32_t>(std::stoul(key))) >= c->num_labels) {
      return InvalidInput(path + ": id2label: '" + key + "' is not a label id below num_labels (" +
                          std::to_string(c->num_labels) + ")");
    }
    if (!e.value().is_string()) return InvalidInput(path + ": id2label." + key + ": expected a string");
    c->labels[id] = e.value().get<std::string>();
  }
  return Status::Ok();
}

Result<HiddenAct> ParseActivation(const std::string& act, const std::string& what) {
  if (act == "gelu") return HiddenAct::kGelu;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") return HiddenAct::kGeluTanh;
  if (act == "relu") return HiddenAct::kRelu;
  return InvalidInput(what + " '" + act + "' is not supported");
}

// A rope theta from transformers 5's rope_parameters ({"full_attention":
// {"rope_type": "default", "rope_theta": ...}, ...}), or the older key.
Result<double> RopeTheta(const nlohmann::json& j, const char* layer_type, const char* old_key, double fallback,
                         const std::string& path) {
  if (auto rp = j.find("rope_parameters"); rp != j.end() && rp->is_object()) {
    auto p = rp->find(layer_type);
    if (p != rp->end() && p->is_object()) {
      const std::string type = p->value("rope_type", "default");
      if (type != "default") {
        return InvalidInput(path + ": rope_parameters." + layer_type + ".rope_type '" + type + "' is not supported");
      }
      if (p->contains("rope_theta")) return p->at("rope_theta").get<double>();
    }
  }
  if (auto t = j.find(old_key); t != j.end() && !t->is_null()) return t->get<double>();
  return fallback;
}

// ModernBERT's own keys (transformers 4.48+ and 5's layer_types / rope_parameters).
Status ReadModernBert(const nlohmann::json& j, const std::string& path, EncoderConfig* c) {
  ModernBertConfig& m = c->modernbert;
  c->layer_norm_eps = j.value("norm_eps", 1e-5f);
  c->max_position_embeddings = j.value("max_position_embeddings", 8192u);
  c->type_vocab_size = 0;
  auto act = ParseActivation(j.value("hidden_activation", "gelu"), path + ": hidden_activation");
  if (!act.ok()) return act.status();
  c->hidden_act = *act;
  auto head_act = ParseActivation(j.value("classifier_activation", "gelu"), path + ": classifier_activation");
  if (!head_act.ok()) return head_act.status();
  m.classifier_act = *head_act;
  const std::string pooling = j.value("classifier_pooling", "cls");
  if (pooling != "cls" && pooling != "mean") {
    return InvalidInput(path + ": classifier_pooling '" + pooling + "' is not cls or mean");
  }
  m.classifier_mean = pooling == "mean";
  m.norm_bias = j.value("norm_bias", false);
  const uint32_t local_attention = j.value("local_attention", 128u);
  if (local_attention < 2) return InvalidInput(path + ": local_attention must be at least 2");
  m.local_window = local_attention / 2;
  m.global_layers.assign(c->num_hidden_layers, true);
  if (auto types = j.find("layer_types"); types != j.end() && !types->is_null()) {
    if (!types->is_array() || types->size() != c->num_hidden_layers) {
      return InvalidInput(path + ": layer_types must list one type per layer");
    }
    for (size_t i = 0; i < types->size(); ++i) {
      const std::string t = (*types)[i].get<std::string>();
      if (t != "full_attention" && t != "sliding_attention") {
        return InvalidInput(path + ": layer_types[" + std::to_string(i) + "] '" + t + "' is not supported");
      }
      m.global_layers[i] = t == "full_attention";
    }
  } else {
    const uint32_t every = j.value("global_attn_every_n_layers", 3u);
    if (every == 0) return InvalidInput(path + ": global_attn_every_n_layers must be positive");
    for (uint32_t i = 0; i < c->num_hidden_layers; ++i) m.global_layers[i] = i % every == 0;
  }
  if (auto s = j.find("rope_scaling"); s != j.end() && !s->is_null()) {
    return InvalidInput(path + ": rope_scaling is not supported for ModernBERT");
  }
  auto global = RopeTheta(j, "full_attention", "global_rope_theta", 160000.0, path);
  if (!global.ok()) return global.status();
  m.global_rope_theta = *global;
  // transformers 4.48: a null local_rope_theta means the global one.
  auto local = RopeTheta(j, "sliding_attention", "local_rope_theta", *global, path);
  if (!local.ok()) return local.status();
  m.local_rope_theta = *local;
  if (!(m.global_rope_theta > 0) || !(m.local_rope_theta > 0)) return InvalidInput(path + ": rope theta must be positive");
  return Status::Ok();
}

}  // namespace

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidInput(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    return InvalidInput(path + ": not valid JSON: " + e.what());
  }
}

bool EncoderConfig::roberta_positions() const {
  return model_type == "roberta" || model_type == "xlm-roberta" || model_type == "camembert" || is_mpnet();
}

bool EncoderConfig::sequence_classifier() const {
  for (const auto& a : architectures) {
    if (a.ends_with("ForSequenceClassification")) return true;
  }
  return false;
}

bool EncoderConfig::token_classifier() const {
  for (const auto& a : architectures) {
    if (a.ends_with("ForTokenClassification")) return true;
  }
  return false;
}

const char* EncoderConfig::non_bert_family() const {
  if (is_modernbert()) return "ModernBERT";
  if (is_nomic_bert()) return "NomicBERT";
  if (is_deberta_v2()) return "DeBERTa-v2";
  if (is_jina_bert()) return "JinaBERT";
  return nullptr;
}

const char* EncoderConfig::cpu_only_family() const {
  if (non_bert_family()) return non_bert_family();
  if (is_distilbert()) return "DistilBERT";
  if (is_mpnet()) return "MPNet";
  if (is_electra()) return "ELECTRA";
  return nullptr;
}

int32_t DebertaV2Config::RelativeRow(int64_t r) const {
  const int64_t span = this->span();
  int64_t bucket = r;
  if (position_buckets > 0) {
    // transformers' make_log_bucket_position: distances under mid as they
    // are, longer ones on a log scale up to max_relative_positions.
    const int64_t mid = position_buckets / 2;
    const int64_t abs = r < mid && r > -mid ? mid - 1 : (r < 0 ? -r : r);
    if (abs > mid) {
      const double log_pos = std::ceil(std::log(static_cast<double>(abs) / mid) /
                                       std::log(static_cast<double>(max_relative_positions - 1) / mid) *
                                       static_cast<double>(mid - 1)) +
                             static_cast<double>(mid);
      bucket = static_cast<int64_t>(log_pos) * (r < 0 ? -1 : 1);
    }
  }
  return static_cast<int32_t>(std::clamp<int64_t>(bucket + span, 0, 2 * span - 1));
}

uint32_t EncoderConfig::max_tokens() const {
  // RoBERTa reserves the positions up to pad_token_id.
  if (roberta_positions()) return max_position_embeddings - static_cast<uint32_t>(pad_token_id) - 1;
  return max_position_embeddings;
}

namespace {

// NomicBERT's config.json: GPT-2's names for the shared fields, and the
// options of nomic's code that Shoal runs; the others are refused by name.
Result<EncoderConfig> ReadNomicBert(const nlohmann::json& j, const std::string& path, EncoderConfig c) {
  c.hidden_size = j.at("n_embd").get<uint32_t>();
  c.num_hidden_layers = j.at("n_layer").get<uint32_t>();
  c.num_attention_heads = j.at("n_head").get<uint32_t>();
  // nomic's gated MLP rounds its width up to a multiple of 256.
  c.intermediate_size = (j.at("n_inner").get<uint32_t>() + 255) / 256 * 256;
  c.vocab_size = j.at("vocab_size").get<uint32_t>();
  c.layer_norm_eps = j.value("layer_norm_epsilon", 1e-12f);
  c.type_vocab_size = j.value("type_vocab_size", 2u);
  c.max_position_embeddings = j.value("n_positions", 2048u);
  c.nomic.rotary_base = j.value("rotary_emb_base", 10000.0);
  auto refuse = [&](const std::string& what) { return InvalidInput(path + ": " + what + " is not supported"); };
  if (j.value("activation_function", "") != "swiglu") return refuse("activation_function other than swiglu");
  if (j.value("prenorm", false)) return refuse("prenorm");
  if (j.value("causal", false)) return refuse("causal");
  if (j.value("rotary_emb_fraction", 1.0) != 1.0) return refuse("rotary_emb_fraction other than 1.0");
  if (j.value("rotary_emb_interleaved", false)) return refuse("rotary_emb_interleaved");
  if (j.contains("rotary_emb_scale_base") && !j["rotary_emb_scale_base"].is_null()) {
    return refuse("rotary_emb_scale_base");
  }
  for (const char* bias : {"qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias"}) {
    if (j.value(bias, false)) return refuse(bias);
  }
  if (j.value("use_rms_norm", false)) return refuse("use_rms_norm");
  // Dynamic NTK scaling changes the rotary base only past the trained
  // length: inputs are held to it instead.
  if (j.contains("rotary_scaling_factor") && !j["rotary_scaling_factor"].is_null()) {
    c.max_position_embeddings = std::min(c.max_position_embeddings, j.value("max_trained_positions", 2048u));
  }
  if (c.hidden_size == 0 || c.num_attention_heads == 0 || c.hidden_size % c.num_attention_heads != 0 ||
      (c.hidden_size / c.num_attention_heads) % 2 != 0) {
    return InvalidInput(path + ": n_embd must be a positive multiple of n_head, with an even head size");
  }
  if (c.num_hidden_layers == 0 || c.intermediate_size == 0 || c.vocab_size == 0) {
    return InvalidInput(path + ": n_layer, n_inner and vocab_size must be positive");
  }
  if (!c.architectures.empty() && c.architectures[0] != "NomicBertModel") {
    return InvalidInput(path + ": " + c.architectures[0] + " is not supported (NomicBertModel)");
  }
  return c;
}

// DeBERTa-v2/v3's options (the shared fields are BERT's names); what
// Shoal does not run is refused by name.
Status ReadDebertaV2(const nlohmann::json& j, const std::string& path, EncoderConfig* c) {
  auto refuse = [&](const std::string& what) { return InvalidInput(path + ": " + what + " is not supported"); };
  DebertaV2Config& d = c->deberta;
  // DebertaV2Config's defaults where BERT's differ.
  c->type_vocab_size = j.value("type_vocab_size", 0u);
  c->layer_norm_eps = j.value("layer_norm_eps", 1e-7f);
  if (j.value("conv_kernel_size", 0) > 0) return refuse("conv_kernel_size (DeBERTa-v2's convolution layer)");
  if (j.contains("embedding_size") && !j["embedding_size"].is_null() &&
      j["embedding_size"].get<uint32_t>() != c->hidden_size) {
    return refuse("an embedding_size other than hidden_size");
  }
  d.position_biased_input = j.value("position_biased_input", true);
  const bool relative = j.value("relative_attention", false);
  std::vector<std::string> types;
  if (auto t = j.find("pos_att_type"); t != j.end() && !t->is_null()) {
    types = t->is_string() ? std::vector<std::string>{t->get<std::string>()} : t->get<std::vector<std::string>>();
  }
  d.c2p = d.p2c = false;
  for (const std::string& t : types) {
    if (t == "c2p") {
      d.c2p = relative;
    } else if (t == "p2c") {
      d.p2c = relative;
    } else {
      return refuse("pos_att_type " + t);
    }
  }
  if (d.relative() && !j.value("share_att_key", false)) return refuse("share_att_key false");
  const int64_t max_rel = j.value("max_relative_positions", int64_t{-1});
  d.max_relative_positions = max_rel < 1 ? c->max_position_embeddings : static_cast<uint32_t>(max_rel);
  const int64_t buckets = j.value("position_buckets", int64_t{-1});
  d.position_buckets = buckets > 0 ? static_cast<uint32_t>(buckets) : 0;
  if (d.position_buckets > 0 && (d.position_buckets < 4 || d.max_relative_positions <= d.position_buckets / 2 + 1)) {
    return InvalidInput(path + ": position_buckets must be at least 4 and under 2 · max_relative_positions");
  }
  const std::string norm = j.value("norm_rel_ebd", "none");
  d.norm_rel_embeddings = norm.find("layer_norm") != std::string::npos;
  d.pooler_hidden_size = j.value("pooler_hidden_size", c->hidden_size);
  auto act = ParseActivation(j.value("pooler_hidden_act", "gelu"), path + ": pooler_hidden_act");
  if (!act.ok()) return act.status();
  d.pooler_act = *act;
  return Status::Ok();
}

}  // namespace

Result<EncoderConfig> LoadEncoderConfig(const std::string& dir) {
  const fs::path path = fs::path(dir) / "config.json";
  auto j = ReadJson(path);
  if (!j.ok()) return j.status();
  EncoderConfig c;
  try {
    c.model_type = j->value("model_type", "");
    if (j->contains("architectures") && (*j)["architectures"].is_array()) {
      c.architectures = (*j)["architectures"].get<std::vector<std::string>>();
    }
    if (c.is_nomic_bert()) return ReadNomicBert(*j, path.string(), std::move(c));
    if (c.model_type == "deberta") {
      return InvalidInput(path.string() + ": DeBERTa v1 (model_type deberta) is not supported; DeBERTa-v2 and v3 "
                          "(deberta-v2) are");
    }
    // Another architecture under BERT's field names would load as BERT, wrongly.
    if (!c.model_type.empty() && !IsNativeEncoderType(c.model_type)) {
      return InvalidInput(path.string() + ": model_type '" + c.model_type +
                          "' is not an encoder the native runtime runs (" + NativeEncoderTypes() +
                          "); the pytorch runtime runs it through transformers where Python can import it");
    }
    // DistilBERT (BERT's layer under other names) names its sizes its own
    // way and fixes what BERT configures: LayerNorm eps 1e-12, no token types.
    const bool distil = c.is_distilbert();
    c.hidden_size = j->at(distil ? "dim" : "hidden_size").get<uint32_t>();
    c.num_hidden_layers = j->at(distil ? "n_layers" : "num_hidden_layers").get<uint32_t>();
    c.num_attention_heads = j->at(distil ? "n_heads" : "num_attention_heads").get<uint32_t>();
    c.intermediate_size = j->at(distil ? "hidden_dim" : "intermediate_size").get<uint32_t>();
    c.vocab_size = j->at("vocab_size").get<uint32_t>();
    if (c.is_electra()) c.embedding_size = j->value("embedding_size", c.hidden_size);
    c.layer_norm_eps = distil ? 1e-12f : j->value("layer_norm_eps", 1e-12f);
    c.max_position_embeddings = j->value("max_position_embeddings", 512u);
    c.type_vocab_size = distil || c.is_mpnet() ? 0u : j->value("type_vocab_size", 2u);
    if (c.is_mpnet()) {  // a bucketed relative bias shared by the layers
      const int64_t buckets = j->value("relative_attention_num_buckets", kMpnetBuckets);
      if (buckets != kMpnetBuckets) {
        return InvalidInput(path.string() + ": relative_attention_num_buckets " + std::to_string(buckets) +
                            " is not supported (MPNet's code buckets into 32 whatever the config says)");
      }
    }
    if (j->contains("pad_token_id") && !(*j)["pad_token_id"].is_null()) {
      c.pad_token_id = (*j)["pad_token_id"].get<int32_t>();
    }
    if (c.is_modernbert()) {
      SHOAL_RETURN_IF_ERROR(ReadModernBert(*j, path.string(), &c));
    } else {
      const char* act_key = distil ? "activation" : "hidden_act";
      auto act = ParseActivation(j->value(act_key, "gelu"), path.string() + ": " + act_key);
      if (!act.ok()) return act.status();
      c.hidden_act = *act;
      const std::string pos = j->value("position_embedding_type", "absolute");
      const std::string feed_forward = j->value("feed_forward_type", "original");
      if (c.is_deberta_v2()) {
        SHOAL_RETURN_IF_ERROR(ReadDebertaV2(*j, path.string(), &c));
      } else if (pos == "alibi" && c.model_type == "bert") {
        c.jina.alibi = true;
        // jina-embeddings-v2-base-code's variant: LayerNorms on q and k, other tensor names.
        const nlohmann::json auto_map = j->value("auto_map", nlohmann::json::object());
        for (const auto& [name, code] : auto_map.items()) {
          if (code.is_string() && code.get<std::string>().find("qk-post-norm") != std::string::npos) {
            return InvalidInput(path.string() + ": jina-bert-v2-qk-post-norm (q/k LayerNorms) is not supported");
          }
        }
      } else if (pos != "absolute") {
        return InvalidInput(path.string() + ": position_embedding_type '" + pos + "' is not supported");
      }
      // JinaBERT's feed-forward; BERT's own configs do not name one.
      if (feed_forward == "geglu" && c.is_jina_bert()) {
        c.jina.geglu = true;
      } else if (feed_forward != "original") {
        return InvalidInput(path.string() + ": feed_forward_type '" + feed_forward + "' is not supported" +
                            (c.is_jina_bert() ? " (original, geglu)" : " without ALiBi"));
      }
    }
    if (j->contains("id2label") && (*j)["id2label"].is_object()) {
      c.num_labels = static_cast<uint32_t>((*j)["id2label"].size());
    }
    c.num_labels = j->value("num_labels", c.num_labels);
    if (!c.sequence_classifier() && !c.token_classifier()) c.num_labels = 0;
    if ((c.sequence_classifier() || c.token_classifier()) && c.num_labels == 0) c.num_labels = 2;  // transformers' default
    if (c.num_labels > 0) SHOAL_RETURN_IF_ERROR(ReadLabels(*j, path.string(), &c));
    const std::string problem = j->value("problem_type", "");
    c.multi_label = problem == "multi_label_classification";
  } catch (const std::exception& e) {
    return InvalidInput(path.string() + ": " + e.what());
  }
  if (c.hidden_size == 0 || c.num_attention_heads == 0 || c.hidden_size % c.num_attention_heads != 0) {
    return InvalidInput(path.string() + ": hidden_size must be a positive multiple of num_attention_heads");
  }
  if (c.num_hidden_layers == 0 || c.intermediate_size == 0 || c.vocab_size == 0) {
    return InvalidInput(path.string() + ": num_hidden_layers, intermediate_size and vocab_size must be positive");
  }
  if (c.roberta_positions() && c.max_position_embeddings <= static_cast<uint32_t>(c.pad_token_id) + 1) {
    return InvalidInput(path.string() + ": max_position_embeddings leaves no positions after pad_token_id");
  }
  return c;
}

namespace {

// ColBERT's settings: the Dense module (identity activation, no residual)
// and config_sentence_transformers.json's.
Result<ColbertConfig> LoadColbertConfig(const std::string& dir, const std::string& dense_path) {
  ColbertConfig c;
  c.dense_dir = (fs::path(dir) / dense_path).string();
  const fs::path dense_cfg_path = fs::path(c.dense_dir) / "config.json";
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json dense, ReadJson(dense_cfg_path));
  const std::string act = dense.value("activation_function", "torch.nn.modules.linear.Identity");
  if (!act.ends_with("Identity")) {
    return InvalidInput(dense_cfg_path.string() + ": activation_function " + act + " is not supported (Identity)");
  }
  if (dense.value("use_residual", false)) {
    return InvalidInput(dense_cfg_path.string() + ": use_residual is not supported");
  }
  const fs::path st_path = fs::path(dir) / "config_sentence_transformers.json";
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json st, ReadJson(st_path));
  c.query_prefix = st.value("query_prefix", c.query_prefix);
  c.document_prefix = st.value("document_prefix", c.document_prefix);
  c.query_length = st.value("query_length", c.query_length);
  c.document_length = st.value("document_length", c.document_length);
  c.query_expansion = st.value("do_query_expansion", c.query_expansion);
  c.attend_to_expansion = st.value("attend_to_expansion_tokens", c.attend_to_expansion);
  c.skiplist_words = st.value("skiplist_words", std::vector<std::string>());
  if (c.query_length < 2 || c.document_length < 2) {
    return InvalidInput(st_path.string() + ": query_length and document_length must leave room for a token after the "
                        "marker");
  }
  return c;
}

}  // namespace

Result<PoolingConfig> LoadPoolingConfig(const std::string& dir) {
  PoolingConfig p;
  const fs::path modules_path = fs::path(dir) / "modules.json";
  std::error_code ec;
  BgeM3Config m3;
  for (auto [file, path] : {std::pair{"sparse_linear.pt", &m3.sparse_linear},
                            std::pair{"colbert_linear.pt", &m3.colbert_linear}}) {
    if (fs::is_regular_file(fs::path(dir) / file, ec)) *path = (fs::path(dir) / file).string();
  }
  if (!m3.sparse_linear.empty() || !m3.colbert_linear.empty()) p.bge_m3 = std::move(m3);
  if (!fs::exists(modules_path, ec)) return p;
  auto modules = ReadJson(modules_path);
  if (!modules.ok()) return modules.status();
  p.from_files = true;
  try {
    for (const auto& m : *modules) {
      const std::string type = m.value("type", "");
      if (type.ends_with("models.Normalize")) p.normalize = true;
      if (type.ends_with("models.SpladePooling")) {
        const fs::path cfg_path = fs::path(dir) / m.value("path", "1_SpladePooling") / "config.json";
        SHOAL_ASSIGN_OR_RETURN(const nlohmann::json cfg, ReadJson(cfg_path));
        const std::string strategy = cfg.value("pooling_strategy", "max");
        const std::string act = cfg.value("activation_function", "relu");
        if ((strategy != "max" && strategy != "sum") || act != "relu") {
          return InvalidInput(cfg_path.string() + ": SpladePooling " + strategy + "/" + act +
                              " is not supported (max or sum, of relu)");
        }
        p.splade = SpladeConfig{.sum = strategy == "sum"};
        continue;
      }
      if (type.starts_with("pylate.") && type.ends_with(".Dense")) {
        SHOAL_ASSIGN_OR_RETURN(ColbertConfig c, LoadColbertConfig(dir, m.value("path", "1_Dense")));
        p.colbert = std::move(c);
        continue;
      }
      if (type.ends_with("models.Transformer") || type.ends_with("models.MLMTransformer") ||
          type.ends_with("models.Normalize")) {
        continue;
      }
      if (!type.ends_with("models.Pooling")) {
        return InvalidInput(modules_path.string() + ": module " + type + " is not supported (Transformer, Pooling, "
                            "Normalize, SPLADE's MLMTransformer and SpladePooling, PyLate's Dense)");
      }
      const fs::path cfg_path = fs::path(dir) / m.value("path", "1_Pooling") / "config.json";
      auto cfg = ReadJson(cfg_path);
      if (!cfg.ok()) return cfg.status();
      const bool cls = cfg->value("pooling_mode_cls_token", false);
      const bool mean = cfg->value("pooling_mode_mean_tokens", false);
      const bool last = cfg->value("pooling_mode_lasttoken", false);
      for (const char* other : {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                                "pooling_mode_weightedmean_tokens"}) {
        if (cfg->value(other, false)) {
          return InvalidInput(cfg_path.string() + ": " + other + " is not supported (CLS, mean or last token only)");
        }
      }
      if (cls + mean + last != 1) {
        return InvalidInput(cfg_path.string() + ": exactly one of pooling_mode_cls_token, "
                            "pooling_mode_mean_tokens and pooling_mode_lasttoken must be true");
      }
      p.pooling = cls ? Pooling::kCls : mean ? Pooling::kMean : Pooling::kLastToken;
    }
  } catch (const std::exception& e) {
    return InvalidInput(modules_path.string() + ": " + e.what());
  }
  return p;
}

}  // namespace shoal::native
