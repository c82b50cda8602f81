// EncoderNetwork: a loaded encoder network, on whichever device runs it
// (Bert or ModernBert on the CPU, CudaBert on an NVIDIA GPU) — what EncoderModel runs a
// tokenized batch through. Also the parts of a BERT-family checkpoint both
// read the same way: where its tensors live, its classification head, its
// position ids and the checks on input sequences.
//
// Threading: implementations are immutable after load; Embed, Classify and
// ClassifyTokens may run from several threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/loaders/safetensors.h"

namespace shoal::native {

class LoraAdapter;
struct LoraTargets;

// One input sequence: token ids and segment (token type) ids, and the LoRA
// adapter it runs under (null: the base network).
struct TokenSequence {
  std::span<const int32_t> ids;
  std::span<const int32_t> type_ids;  // may be empty: all 0
  const LoraAdapter* lora = nullptr;
  // Tokens the others may attend to: the first `attend` (0: all). ColBERT's
  // query expansion runs [MASK] tokens that see the query and that nothing
  // sees.
  uint32_t attend = 0;
};

class EncoderNetwork {
 public:
  virtual ~EncoderNetwork() = default;

  virtual const EncoderConfig& config() const = 0;
  virtual bool has_classifier() const = 0;
  // Bytes held where the network runs (host memory, or device memory on a GPU).
  virtual size_t memory_bytes() const = 0;
  // The dense layers and heads LoRA adapters may change (their indices are
  // what LoraAdapter's are), or null when this network runs no adapters.
  virtual const LoraTargets* lora_targets() const { return nullptr; }

  // One pooled vector per sequence (config().hidden_size floats each).
  // `threads`: cores a CPU network may use; a GPU network ignores it. By
  // default HiddenStates, then PoolSequences.
  virtual Status Embed(std::span<const TokenSequence> seqs, Pooling pooling, bool normalize, float* out,
                       int threads) const;

  // The last hidden states of every token, packed ([rows, hidden_size];
  // sequence s at rows offsets[s]..offsets[s+1]): what the output heads
  // (output_heads.h) read. CPU networks only, so far.
  virtual Status HiddenStates(std::span<const TokenSequence> seqs, std::vector<float>* hidden,
                              std::vector<uint32_t>* offsets, int threads) const {
    return InvalidInput("this network gives no per-token hidden states (sparse and multi-vector outputs run on "
                        "the CPU backend)");
  }

  // The classification head's logits per sequence (config().num_labels
  // floats each); the head reads the first token ([CLS] / <s>).
  virtual Status Classify(std::span<const TokenSequence> seqs, float* out, int threads) const = 0;

  // A token-classification head's logits per token (config().num_labels
  // floats each), the sequences' tokens back to back.
  virtual Status ClassifyTokens(std::span<const TokenSequence> seqs, float* out, int threads) const {
    return InvalidInput("this network runs no token-classification head");
  }
};

// Where the encoder's tensors live in a checkpoint: bare (sentence-
// transformers), or under the task model's attribute name ("bert.", ...).
std::string EncoderWeightPrefix(const SafeTensors& w);
// The word-embedding table's name (what a tied MLM decoder reads): BERT's
// embeddings.word_embeddings, ModernBERT's embeddings.tok_embeddings, each
// under its checkpoint's prefix.
std::string WordEmbeddingsName(const EncoderConfig& config, const SafeTensors& w);

// The two dense layers of a sequence-classification head on the first
// token: BERT's pooler (dense + tanh) then classifier, RoBERTa's
// classifier.dense (+ tanh) then classifier.out_proj, or DistilBERT's
// pre_classifier (+ ReLU) then classifier.
struct ClassifierHeadNames {
  std::string dense;
  std::string out;
  cpu::Activation activation = cpu::Activation::kTanh;  // after dense
};
ClassifierHeadNames FindClassifierHead(const SafeTensors& w, const std::string& prefix);

// INVALID_INPUT naming the first sequence that is empty, too long, or has a
// token id or type outside the model's tables, or an attend count over its
// length.
Status CheckSequences(const EncoderConfig& config, std::span<const TokenSequence> seqs);

// Where each sequence's rows start once packed: 0, then the running sum of
// their lengths (one more entry than sequences).
std::vector<uint32_t> SequenceOffsets(std::span<const TokenSequence> seqs);

// Each sequence's attend count, for cpu::Attention's key limits; empty when
// every token of every sequence may be attended to.
std::vector<uint32_t> KeyLimits(std::span<const TokenSequence> seqs);


// One vector per sequence from its rows of `hidden` ([rows, width], sequence
// s at rows offsets[s]..offsets[s+1]), as `pooling` says, unit length when
// `normalize`.
void PoolSequences(const float* hidden, size_t width, std::span<const uint32_t> offsets, Pooling pooling,
                   bool normalize, float* out);

// ALiBi's slopes for `heads` heads: 2^(−8i/n) for a power of two n, else
// the power of two below's, then every other one of the next's.
std::vector<float> AlibiSlopes(int heads);
// ALiBi as attention's relative bias: −slope_h·|j − i|, for sequences of up
// to max_len tokens.
cpu::RelativeBias AlibiBias(std::span<const float> slopes, size_t max_len);

// MPNet's relative-position bucket (of 32) of a key `distance` = j − i
// from its query: T5's bidirectional scheme with max distance 128, as
// modeling_mpnet.py computes it (always 32 buckets, whatever the config says).
int32_t MpnetBucket(int64_t distance);
// MPNet's bias as attention's: head h at distance d reads weight[bucket(d)][h]
// (encoder.relative_attention_bias, [32][heads]).
cpu::RelativeBias MpnetBias(const float* weight, size_t heads, size_t max_len);

// The table cpu::Rope reads for `positions` positions: per position, the
// cosines then the sines of position · θ^(−2i/head_dim), i < head_dim/2
// (computed in double).
std::vector<float> RotaryTable(size_t positions, size_t head_dim, double theta);

// The kernels' activation for a config's.
cpu::Activation ActivationOf(HiddenAct a);

// The position id of each token of `ids` into `out`: 0, 1, ... for BERT.
// RoBERTa numbers positions after pad_token_id and, as transformers does,
// gives a pad token (never produced from text) the pad position without
// advancing the count.
void EncoderPositions(const EncoderConfig& config, std::span<const int32_t> ids, int32_t* out);

}  // namespace shoal::native
