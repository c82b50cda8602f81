// The configuration files of a Hugging Face model directory that the native
// runtime reads: `config.json` (the architecture), and the
// sentence-transformers files `modules.json` + `<pooling dir>/config.json`
// (how token vectors become one sentence vector, and whether it is
// normalized). Missing optional files fall back to what transformers and
// sentence-transformers would assume; present but malformed files are errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace shoal::native {

// A JSON file of a model directory; INVALID_INPUT naming the file when it
// cannot be read or parsed.
Result<nlohmann::json> ReadJsonFile(const std::string& path);

enum class HiddenAct { kGelu, kGeluTanh, kRelu };

// What ModernBERT (model_type modernbert) adds to the shared fields:
// rotary positions, layers that alternate global and local (sliding-window)
// attention, a GeGLU feed-forward, pre-norm LayerNorms without biases.
struct ModernBertConfig {
  std::vector<bool> global_layers;   // per layer: full attention (else local)
  uint32_t local_window = 64;        // a local layer's tokens see those at most this far (local_attention / 2)
  double global_rope_theta = 160000.0;
  double local_rope_theta = 10000.0;
  bool norm_bias = false;
  // Classification heads: dense → activation → LayerNorm on the pooled (or
  // every) token, then the classifier.
  bool classifier_mean = false;      // classifier_pooling: mean (else cls)
  HiddenAct classifier_act = HiddenAct::kGelu;
};

struct EncoderConfig {
  std::string model_type;               // bert, roberta, xlm-roberta, modernbert, ...
  std::vector<std::string> architectures;
  uint32_t hidden_size = 0;
  uint32_t num_hidden_layers = 0;
  uint32_t num_attention_heads = 0;
  uint32_t intermediate_size = 0;
  HiddenAct hidden_act = HiddenAct::kGelu;
  float layer_norm_eps = 1e-12f;
  uint32_t max_position_embeddings = 512;
  uint32_t type_vocab_size = 2;  // 0: the model takes no token types (ModernBERT)
  uint32_t vocab_size = 0;
  int32_t pad_token_id = 0;
  uint32_t num_labels = 0;  // classification heads only
  // The heads' label names (config.json's id2label; "LABEL_<i>" where it
  // says none), one per label.
  std::vector<std::string> labels;
  bool multi_label = false;  // problem_type multi_label_classification: a sigmoid per label
  ModernBertConfig modernbert;  // read for model_type modernbert only

  bool is_modernbert() const { return model_type == "modernbert"; }

  // RoBERTa-style models number positions from pad_token_id + 1.
  bool roberta_positions() const;
  // A sequence-classification head (cross-encoder) follows the encoder.
  bool sequence_classifier() const;
  // A token-classification head (NER) follows the encoder.
  bool token_classifier() const;
  // The longest input the position table allows.
  uint32_t max_tokens() const;
};

Result<EncoderConfig> LoadEncoderConfig(const std::string& dir);

// How token vectors become one: the first token's, their mean, or the last
// token's (decoder embedders, whose last token has seen the whole text).
enum class Pooling { kCls, kMean, kLastToken };

struct PoolingConfig {
  Pooling pooling = Pooling::kCls;
  bool normalize = false;
  bool from_files = false;  // read from sentence-transformers files
};

// The pooling a sentence-transformers directory declares (CLS, mean or last
// token); without the files, CLS and no normalization (what a bare
// transformers encoder gives).
Result<PoolingConfig> LoadPoolingConfig(const std::string& dir);

}  // namespace shoal::native
