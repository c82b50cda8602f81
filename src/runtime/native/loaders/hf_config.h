// The configuration files of a Hugging Face model directory that the native
// runtime reads: `config.json` (the architecture), and the
// sentence-transformers files `modules.json` + `<pooling dir>/config.json`
// (how token vectors become one sentence vector, and whether it is
// normalized). Missing optional files fall back to what transformers and
// sentence-transformers would assume; present but malformed files are errors.
#pragma once

#include <cstdint>
#include <optional>
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

// What NomicBERT (model_type nomic_bert: nomic-embed-text) has instead of
// BERT's: rotary positions, a fused q|k|v projection, a SwiGLU feed-forward,
// no biases on its dense layers; its LayerNorms stay post-norm as BERT's.
// Its config.json names the shared fields GPT-2's way (n_embd, n_head, ...).
struct NomicBertConfig {
  double rotary_base = 10000.0;
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
  NomicBertConfig nomic;        // read for model_type nomic_bert only

  bool is_modernbert() const { return model_type == "modernbert"; }
  bool is_nomic_bert() const { return model_type == "nomic_bert"; }

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

// SPLADE, as sentence-transformers' SparseEncoder saves it (MLMTransformer
// then SpladePooling): the MLM head's logits per token, log(1 + ReLU), then
// the max (or the sum) over the tokens.
struct SpladeConfig {
  bool sum = false;  // pooling_strategy "sum"; else "max"
};

// ColBERT as PyLate saves it: a Dense projection of every token after the
// Transformer (no pooling), and in config_sentence_transformers.json the
// marker tokens put after the first token, the lengths (marker included),
// query expansion with [MASK] tokens, and the skiplist of document tokens.
struct ColbertConfig {
  std::string dense_dir;  // the Dense module's directory, absolute
  std::string query_prefix = "[Q] ";
  std::string document_prefix = "[D] ";
  uint32_t query_length = 32;
  uint32_t document_length = 180;
  bool query_expansion = true;
  bool attend_to_expansion = false;
  std::vector<std::string> skiplist_words;
};

// bge-m3's extra heads (FlagEmbedding's layout: files beside the weights):
// sparse_linear.pt gives lexical weights, colbert_linear.pt a vector per
// token; either path may be empty.
struct BgeM3Config {
  std::string sparse_linear;
  std::string colbert_linear;
};

// What a directory's sentence-transformers files (modules.json) say the
// encoder's output is: a pooled vector (CLS, mean or last token; normalized
// or not), SPLADE's sparse vector, or ColBERT's vectors per token. Without
// the files: CLS and no normalization (what a bare transformers encoder
// gives). A module type it does not know is refused, naming it.
struct PoolingConfig {
  Pooling pooling = Pooling::kCls;
  bool normalize = false;
  bool from_files = false;  // read from sentence-transformers files
  std::optional<SpladeConfig> splade;
  std::optional<ColbertConfig> colbert;
  std::optional<BgeM3Config> bge_m3;  // besides the pooled vector
};

Result<PoolingConfig> LoadPoolingConfig(const std::string& dir);

}  // namespace shoal::native
