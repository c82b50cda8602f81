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

// What DeBERTa-v2/v3 (model_type deberta-v2) adds to the shared fields:
// disentangled attention. Besides q·k, each score has a content-to-position
// term (q·pos_k) and a position-to-content one (k·pos_q), where pos_q and
// pos_k are relative-position embeddings through the layer's own query and
// key projections, picked by the distance i − j in log buckets. And the
// sequence classifier's pooler (dense + activation on the first token).
struct DebertaV2Config {
  bool c2p = true, p2c = true;            // pos_att_type (relative_attention false: neither)
  bool position_biased_input = false;     // absolute positions added to the embeddings too
  uint32_t position_buckets = 256;        // 0: the distances themselves, clamped
  uint32_t max_relative_positions = 512;  // the buckets' range
  bool norm_rel_embeddings = true;        // norm_rel_ebd "layer_norm": encoder.LayerNorm on them
  uint32_t pooler_hidden_size = 0;
  HiddenAct pooler_act = HiddenAct::kGelu;

  bool relative() const { return c2p || p2c; }
  // Relative-embedding rows used: 2 · (position_buckets, else max_relative_positions).
  uint32_t span() const { return position_buckets > 0 ? position_buckets : max_relative_positions; }
  // The row distance r = i − j reads: clamp(bucket(r) + span, 0, 2·span − 1).
  int32_t RelativeRow(int64_t r) const;
};

// JinaBERT (jina-embeddings-v2 and its rerankers: model_type bert with
// position_embedding_type alibi): ALiBi instead of a position table, and
// with feed_forward_type geglu a gated feed-forward (mlp.gated_layers,
// mlp.wo, mlp.layernorm) instead of BERT's intermediate/output pair.
struct JinaBertConfig {
  bool alibi = false;
  bool geglu = false;
};

// MPNet's relative-position buckets: its code always uses 32, and a config
// saying otherwise is refused.
constexpr int64_t kMpnetBuckets = 32;

struct EncoderConfig {
  std::string model_type;               // bert, roberta, xlm-roberta, modernbert, ...
  std::vector<std::string> architectures;
  uint32_t hidden_size = 0;
  // ELECTRA: the embedding tables' width when narrower than the layers'
  // (embeddings_project maps it up); 0: hidden_size.
  uint32_t embedding_size = 0;
  uint32_t num_hidden_layers = 0;
  uint32_t num_attention_heads = 0;
  uint32_t intermediate_size = 0;
  HiddenAct hidden_act = HiddenAct::kGelu;
  float layer_norm_eps = 1e-12f;
  uint32_t max_position_embeddings = 512;
  uint32_t type_vocab_size = 2;  // 0: the model takes no token types (ModernBERT, DistilBERT, MPNet)
  uint32_t vocab_size = 0;
  int32_t pad_token_id = 0;
  uint32_t num_labels = 0;  // classification heads only
  // The heads' label names (config.json's id2label; "LABEL_<i>" where it
  // says none), one per label.
  std::vector<std::string> labels;
  bool multi_label = false;  // problem_type multi_label_classification: a sigmoid per label
  ModernBertConfig modernbert;  // read for model_type modernbert only
  NomicBertConfig nomic;        // read for model_type nomic_bert only
  DebertaV2Config deberta;      // read for model_type deberta-v2 only
  JinaBertConfig jina;          // read for model_type bert only

  bool is_modernbert() const { return model_type == "modernbert"; }
  bool is_distilbert() const { return model_type == "distilbert"; }
  bool is_mpnet() const { return model_type == "mpnet"; }
  bool is_electra() const { return model_type == "electra"; }
  uint32_t embedding_width() const { return embedding_size > 0 ? embedding_size : hidden_size; }
  bool is_nomic_bert() const { return model_type == "nomic_bert"; }
  bool is_deberta_v2() const { return model_type == "deberta-v2"; }
  bool is_jina_bert() const { return jina.alibi; }
  // Null for the BERT family (BERT, RoBERTa, XLM-R, ...), whose encoder the
  // GPU backend, LoRA and the output heads run; else the architecture's name
  // for messages saying what does not run on it yet (ModernBERT takes LoRA
  // adapters and SPLADE, the rest neither).
  const char* non_bert_family() const;
  // Null where the CUDA backend runs the model (BERT's tensor names and
  // layer); else the architecture's name, for the message saying it does not.
  const char* cpu_only_family() const;

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
inline const char* PoolingName(Pooling p) {
  return p == Pooling::kCls ? "cls" : p == Pooling::kMean ? "mean" : "last-token";
}

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
