#include "runtime/native/loaders/decoder_config.h"

#include <cmath>
#include <filesystem>
#include <numbers>

#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/loaders/model_types.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

// eos_token_id is an int or a list of ints; generation_config.json may
// list more than config.json (Llama-3-Instruct adds <|eot_id|>).
void AddEosIds(const nlohmann::json& j, std::vector<int32_t>* out) {
  auto add = [&](const nlohmann::json& v) {
    if (!v.is_number_integer()) return;
    const int32_t id = v.get<int32_t>();
    if (std::find(out->begin(), out->end(), id) == out->end()) out->push_back(id);
  };
  if (!j.contains("eos_token_id")) return;
  const auto& e = j["eos_token_id"];
  if (e.is_array()) {
    for (const auto& v : e) add(v);
  } else {
    add(e);
  }
}

// The sampling defaults generation_config.json gives, each checked against
// the range a request may ask for (a model's defaults are requests' values).
Status ReadSamplingDefaults(const nlohmann::json& g, const std::string& path, SamplingDefaults* out) {
  // A field's value where given; `ok` says whether it is in range, `range` how to say so.
  auto number = [&](const char* key, bool (*ok)(double), const char* range) -> Result<std::optional<double>> {
    if (!g.contains(key) || g[key].is_null()) return std::optional<double>();
    if (!g[key].is_number() || !ok(g[key].get<double>())) {
      return InvalidInput(path + ": " + key + " " + g[key].dump() + " is out of range (" + range + ")");
    }
    return std::optional<double>(g[key].get<double>());
  };
  SHOAL_ASSIGN_OR_RETURN(auto temperature, number("temperature", [](double v) { return v >= 0 && v <= 2; }, "0 to 2"));
  SHOAL_ASSIGN_OR_RETURN(auto top_p, number("top_p", [](double v) { return v > 0 && v <= 1; }, "above 0, at most 1"));
  SHOAL_ASSIGN_OR_RETURN(auto top_k, number("top_k", [](double v) { return v >= 0 && v <= 1e9 && v == std::floor(v); },
                                            "an integer, 0 or more"));
  SHOAL_ASSIGN_OR_RETURN(auto repetition, number("repetition_penalty", [](double v) { return v > 0 && v <= 2; },
                                                 "above 0, at most 2"));
  if (temperature) out->temperature = static_cast<float>(*temperature);
  if (top_p) out->top_p = static_cast<float>(*top_p);
  if (top_k) out->top_k = static_cast<int32_t>(*top_k);
  if (repetition) out->repetition_penalty = static_cast<float>(*repetition);
  return Status::Ok();
}

// A vision-language model's text_config as transformers saves it: only the
// fields that differ from the config class's defaults (llava-1.5's names no
// sizes at all). These are LlamaConfig's and Qwen2Config's; other
// decoders' must be written out.
nlohmann::json TextConfigDefaults(const std::string& model_type) {
  if (model_type == "llama") {
    return {{"vocab_size", 32000}, {"hidden_size", 4096}, {"intermediate_size", 11008},
            {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"max_position_embeddings", 2048},
            {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0}};
  }
  if (model_type == "qwen2") {
    return {{"vocab_size", 151936}, {"hidden_size", 4096}, {"intermediate_size", 22016},
            {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 32},
            {"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000.0}};
  }
  return nlohmann::json::object();
}

}  // namespace

bool IsDecoderConfig(const std::string& dir) {
  auto j = ReadJsonFile((fs::path(dir) / "config.json").string());
  if (!j.ok() || !j->is_object()) return false;
  const std::string type = j->value("model_type", "");
  // LLaVA: a known decoder under its vision tower (LoadDecoderConfig says
  // what it lacks otherwise).
  return IsNativeDecoderType(type) || type == "llava";
}

Result<DecoderConfig> LoadDecoderConfig(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  auto j = ReadJsonFile(path);
  if (!j.ok()) return j.status();
  DecoderConfig c;
  try {
    // A vision-language model (LLaVA) keeps its language model's fields in
    // text_config.
    const nlohmann::json* body = &*j;
    nlohmann::json text;
    if (j->value("model_type", "") == "llava") {
      if (!j->contains("text_config") || !(*j)["text_config"].is_object()) {
        return InvalidInput(path + ": a llava model needs its text_config");
      }
      text = TextConfigDefaults((*j)["text_config"].value("model_type", ""));
      text.update((*j)["text_config"]);
      body = &text;
      c.vision_language = true;
    }
    c.model_type = body->value("model_type", "");
    if (!IsNativeDecoderType(c.model_type)) {
      return InvalidInput(path + ": model_type '" + c.model_type +
                          "' is not a supported decoder (llama, mistral, qwen2, qwen3)");
    }
    c.hidden_size = body->at("hidden_size").get<uint32_t>();
    c.intermediate_size = body->at("intermediate_size").get<uint32_t>();
    c.num_hidden_layers = body->at("num_hidden_layers").get<uint32_t>();
    c.num_attention_heads = body->at("num_attention_heads").get<uint32_t>();
    c.num_key_value_heads = body->value("num_key_value_heads", c.num_attention_heads);
    if (body->contains("head_dim") && !(*body)["head_dim"].is_null()) {
      c.head_dim = (*body)["head_dim"].get<uint32_t>();
    } else if (c.num_attention_heads > 0) {
      c.head_dim = c.hidden_size / c.num_attention_heads;
    }
    c.vocab_size = body->at("vocab_size").get<uint32_t>();
    c.max_position_embeddings = body->value("max_position_embeddings", 2048u);
    c.rms_norm_eps = body->value("rms_norm_eps", 1e-6f);
    c.rope_theta = body->value("rope_theta", 10000.0f);
    c.tie_word_embeddings = body->value("tie_word_embeddings", false);
    c.qk_norm = c.model_type == "qwen3";
    const std::string act = body->value("hidden_act", "silu");
    if (act != "silu") return InvalidInput(path + ": hidden_act '" + act + "' is not supported (silu)");
    if (body->contains("rope_scaling") && (*body)["rope_scaling"].is_object()) {
      const auto& r = (*body)["rope_scaling"];
      c.rope_type = r.value("rope_type", r.value("type", ""));
      if (c.rope_type == "default") c.rope_type.clear();
      if (!c.rope_type.empty() && c.rope_type != "linear" && c.rope_type != "llama3") {
        return InvalidInput(path + ": rope_scaling type '" + c.rope_type +
                            "' is not supported (linear, llama3)");
      }
      c.rope_factor = r.value("factor", 1.0f);
      c.rope_low_freq_factor = r.value("low_freq_factor", 1.0f);
      c.rope_high_freq_factor = r.value("high_freq_factor", 4.0f);
      c.rope_original_max_positions = r.value("original_max_position_embeddings", 8192u);
    }
    // A sliding window only matters past its length: serve at most that.
    const bool sliding = body->value("use_sliding_window", c.model_type == "mistral");
    if (sliding && body->contains("sliding_window") && (*body)["sliding_window"].is_number_integer()) {
      c.max_position_embeddings =
          std::min(c.max_position_embeddings, (*body)["sliding_window"].get<uint32_t>());
    }
    // Two spellings of one switch; a value other than a boolean (Gemma's
    // "vision") means a mask this runtime does not build.
    for (const auto& [key, bidirectional_when] : {std::pair{"is_causal", false},
                                                  std::pair{"use_bidirectional_attention", true}}) {
      if (!body->contains(key) || (*body)[key].is_null()) continue;
      if (!(*body)[key].is_boolean()) {
        return InvalidInput(path + ": " + key + " " + (*body)[key].dump() + " is not supported (true or false)");
      }
      if ((*body)[key].get<bool>() == bidirectional_when) c.bidirectional = true;
    }
    AddEosIds(*j, &c.eos_token_ids);
  } catch (const std::exception& e) {
    return InvalidInput(path + ": " + e.what());
  }
  const fs::path gen = fs::path(dir) / "generation_config.json";
  std::error_code ec;
  if (fs::exists(gen, ec)) {
    auto g = ReadJsonFile(gen.string());
    if (!g.ok()) return g.status();
    if (g->is_object()) {
      AddEosIds(*g, &c.eos_token_ids);
      SHOAL_RETURN_IF_ERROR(ReadSamplingDefaults(*g, gen.string(), &c.sampling_defaults));
    }
  }
  if (c.hidden_size == 0 || c.intermediate_size == 0 || c.num_hidden_layers == 0 ||
      c.vocab_size == 0 || c.head_dim == 0 || c.head_dim % 2 != 0) {
    return InvalidInput(path + ": hidden_size, intermediate_size, num_hidden_layers, vocab_size "
                        "must be positive and head_dim even");
  }
  if (c.num_attention_heads == 0 || c.num_key_value_heads == 0 ||
      c.num_attention_heads % c.num_key_value_heads != 0) {
    return InvalidInput(path + ": num_attention_heads must be a positive multiple of num_key_value_heads");
  }
  if (c.rope_factor <= 0 || (c.rope_type == "llama3" && c.rope_high_freq_factor <= c.rope_low_freq_factor)) {
    return InvalidInput(path + ": rope_scaling factors out of range");
  }
  return c;
}

std::vector<double> RopeInverseFrequencies(const DecoderConfig& c) {
  const size_t half = c.head_dim / 2;
  std::vector<double> inv(half);
  for (size_t i = 0; i < half; ++i) {
    inv[i] = 1.0 / std::pow(static_cast<double>(c.rope_theta), 2.0 * i / c.head_dim);
  }
  if (c.rope_type == "linear") {
    for (double& f : inv) f /= c.rope_factor;
  } else if (c.rope_type == "llama3") {
    // Long wavelengths are slowed by `factor`, short ones kept, and the band
    // between blends the two (transformers' _compute_llama3_parameters).
    const double old_len = c.rope_original_max_positions;
    const double low_wavelen = old_len / c.rope_low_freq_factor;
    const double high_wavelen = old_len / c.rope_high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= c.rope_factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_len / wavelen - c.rope_low_freq_factor) /
                              (c.rope_high_freq_factor - c.rope_low_freq_factor);
        f = (1 - smooth) * f / c.rope_factor + smooth * f;
      }
    }
  }
  return inv;
}

}  // namespace shoal::native
