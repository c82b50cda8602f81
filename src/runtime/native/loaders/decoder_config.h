// config.json of a decoder-only generator: the Llama family as Hugging Face
// writes it (llama, mistral, qwen2, qwen3; or LLaVA's language model, its
// text_config), with the RoPE scaling the config
// asks for. Missing optional fields take transformers' defaults; what the
// native runtime cannot run faithfully (yarn/dynamic RoPE, a sliding window
// shorter than the context it would serve) is an error, not an approximation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/generator.h"

namespace shoal::native {

struct DecoderConfig {
  std::string model_type;  // llama, mistral, qwen2, qwen3
  uint32_t hidden_size = 0;
  uint32_t intermediate_size = 0;
  uint32_t num_hidden_layers = 0;
  uint32_t num_attention_heads = 0;
  uint32_t num_key_value_heads = 0;  // = heads unless grouped-query attention
  uint32_t head_dim = 0;             // = hidden / heads unless given (Qwen3)
  uint32_t vocab_size = 0;
  uint32_t max_position_embeddings = 2048;
  float rms_norm_eps = 1e-6f;
  float rope_theta = 10000.0f;
  // rope_scaling, when present: "linear" (factor) or "llama3" (factor,
  // low/high_freq_factor, original_max_position_embeddings).
  std::string rope_type;  // "" for none
  float rope_factor = 1.0f;
  float rope_low_freq_factor = 1.0f;
  float rope_high_freq_factor = 4.0f;
  uint32_t rope_original_max_positions = 8192;
  bool tie_word_embeddings = false;
  bool qk_norm = false;  // Qwen3: RMSNorm on each query/key head before RoPE
  // Every position attends to every other (embedders trained so: gte-Qwen2,
  // voyage-4-nano): `is_causal: false` or `use_bidirectional_attention: true`.
  // Such a network embeds; it cannot generate.
  bool bidirectional = false;
  // A vision-language model (model_type llava): these are its text_config's
  // fields; its vision tower and projector are image_prompt_encoder.h's.
  bool vision_language = false;
  std::vector<int32_t> eos_token_ids;
  // generation_config.json's temperature, top_p, top_k and
  // repetition_penalty, where it gives them (as vLLM takes them: do_sample
  // is not read).
  SamplingDefaults sampling_defaults;
};

Result<DecoderConfig> LoadDecoderConfig(const std::string& dir);

// Whether a config.json describes a decoder this runtime generates with.
bool IsDecoderConfig(const std::string& dir);

// RoPE's inverse frequencies (head_dim / 2 of them) with the config's
// scaling applied, as transformers' rope initialisation computes them.
std::vector<double> RopeInverseFrequencies(const DecoderConfig& c);

}  // namespace shoal::native
