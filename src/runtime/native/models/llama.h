// Decoder-only Llama-family networks (Llama 2/3, Mistral, Qwen2, Qwen3) from a
// Hugging Face directory, run one generation step at a time over a paged KV
// cache.
//
//   x = embed(tokens)
//   per layer:  x += o(attn(rope(q), rope(k), v))     q,k,v = proj(rms(x))
//               x += down(silu(gate(rms(x))) · up(rms(x)))
//   logits = lm_head(rms(x)) for the rows that want them
//
// An embedder (Qwen3-Embedding) runs the same layers and pools rms(x) of each
// sequence instead (PooledHiddenStates); its checkpoint may be the bare model
// (`embed_tokens.weight`, no `model.` prefix) without a head. One trained
// bidirectionally (config.bidirectional: gte-Qwen2) lets every position
// attend to the whole sequence.
//
// Qwen2 adds biases to q/k/v; Qwen3 normalizes each query and key head
// (RMSNorm over head_dim) before RoPE; tied models use the embedding table as
// the output head. Attention is grouped-query (kv heads ≤ heads).
//
// The KV cache is owned here: `kv_blocks` blocks of `block_tokens` positions,
// per layer a K and a V pool laid out as decoder_kernels.h's KvLayer.
//
// Threading: weights are immutable; Step writes the KV cache and per-step
// scratch held by the object, so one Step at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/generator.h"
#include "runtime/native/kernels/cpu/decoder_kernels.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/loaders/decoder_config.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/loaders/safetensors.h"
#include "runtime/native/lora/lora_adapter.h"

namespace shoal::native {

class Llama {
 public:
  // `context` caps the positions a sequence may use (≤ the config's);
  // without `with_head` no output head is read or prepared (an embedder);
  // `progress` (optional) hears the fraction of layers loaded.
  static Result<std::unique_ptr<Llama>> Load(const std::string& dir, const DecoderConfig& config,
                                             cpu::Precision precision, uint32_t context,
                                             uint32_t kv_blocks, uint32_t block_tokens, bool with_head = true,
                                             const std::function<void(double)>& progress = {});
  ~Llama();

  const DecoderConfig& config() const { return config_; }
  uint32_t context() const { return context_; }
  size_t weight_bytes() const { return weight_bytes_; }
  size_t kv_bytes() const { return kv_floats_ * sizeof(float); }
  // Bytes of KV cache one position takes (all layers, K and V).
  size_t kv_bytes_per_token() const;

  // One step (see Generator::Forward). Checks token ids, positions and block
  // tables first: a bad chunk fails the call with INVALID_INPUT, nothing run.
  // `adapters`: empty, or the LoRA adapter of each chunk (null: the base);
  // chunks under different adapters share the base GEMMs.
  Status Step(std::span<const SequenceChunk> chunks, std::span<const LoraAdapter* const> adapters, float* logits,
              int threads);

  // The same layers over `chunks` (their KV written as Step writes it), then
  // the final RMSNorm of each chunk's first token (kCls), last token
  // (kLastToken) or the mean over its tokens (kMean) into out
  // ([chunks, hidden_size]): what an embedder pools. A bidirectional
  // network's chunks must be whole sequences (start 0).
  Status PooledHiddenStates(std::span<const SequenceChunk> chunks, Pooling pooling, float* out, int threads);

  // Per layer, in order: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
  // down_proj (kLoraPerLayer of them); nothing replaceable.
  const LoraTargets& lora_targets() const { return lora_targets_; }
  static constexpr size_t kLoraPerLayer = 7;
  static LoraTargets LoraTargetsOf(const DecoderConfig& config);

 private:
  struct Layer;
  Llama() = default;
  Status Check(std::span<const SequenceChunk> chunks) const;
  // Checks the chunks and runs every layer over their tokens: x_ holds the
  // residual stream of every row after, seqs each chunk's rows.
  Status RunLayers(std::span<const SequenceChunk> chunks, std::span<const LoraAdapter* const> adapters,
                   std::vector<cpu::AttentionSeq>* seqs, int threads);
  cpu::KvLayer KvFor(size_t layer) const;

  DecoderConfig config_;
  uint32_t context_ = 0;
  uint32_t kv_blocks_ = 0;
  uint32_t block_tokens_ = 16;
  std::unique_ptr<SafeTensors> weights_;
  std::vector<std::vector<float>> converted_;  // f16/bf16 tensors as f32
  const float* embed_ = nullptr;               // [vocab][hidden]
  const float* final_norm_ = nullptr;
  std::vector<Layer> layers_;
  std::unique_ptr<cpu::Linear> lm_head_;  // null without a head
  std::vector<float> rope_;  // per position: cos[head_dim/2], sin[head_dim/2]
  // Per layer: K pool then V pool. Left uninitialised: a position is always
  // written before it is read, and untouched pages cost no memory.
  std::unique_ptr<float[]> kv_;
  size_t kv_floats_ = 0;
  size_t weight_bytes_ = 0;
  LoraTargets lora_targets_;
  // Per-step scratch (one Step at a time).
  std::vector<float> x_, h_, qkv_, attn_, gate_up_, act_, last_;
  std::vector<uint32_t> positions_;
};

}  // namespace shoal::native
