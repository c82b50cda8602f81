// DecoderModel: a Llama-family generator and its tokenizer and chat template
// behind the Runtime interface — it generates through Generator
// (runtime/generator.h) and tokenizes for /v1/tokenize; it has no Encode or
// Score.
//
// Sizes: a sequence may use `max_context` positions (native.max_context,
// else the config's max_position_embeddings up to 4096); the KV cache holds
// native.kv_cache_tokens positions (else max_batch_requests full sequences,
// within 256 MiB, and never less than one full sequence). The cache is
// allocated at load and counted in memory_bytes(), so residency budgets it.
//
// Sequences may run under LoRA adapters (SequenceChunk::lora), loaded when a
// step first names them (lora/lora_registry.h) and mixed freely in a step.
//
// A vision-language model (LLaVA: config.json's model_type llava) reads
// images too: EmbedImage gives an image's rows (image_prompt_encoder.h),
// which stand in the prompt in place of its placeholder tokens
// (SequenceChunk::embeddings); its chat template sees every message's
// content as a list of parts ({"type": "text", "text"}, {"type": "image"}),
// as transformers' processors give it.
//
// Threading: tokenizing and rendering are immutable and may run anywhere;
// Forward writes the KV cache: one at a time (the generation engine's).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/generator.h"
#include "runtime/native/chat/chat_template.h"
#include "runtime/native/image_prompt_encoder.h"
#include "runtime/native/lora/lora_registry.h"
#include "runtime/native/models/llama.h"
#include "runtime/native/native_options.h"
#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/runtime.h"

namespace shoal::native {

class DecoderModel final : public Model, public Generator {
 public:
  static Result<std::unique_ptr<Model>> Load(const ModelConfig& spec, const NativeOptions& options,
                                             const LoadContext& ctx);

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override;
  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) override;
  Generator* generator() override { return this; }
  Status UpdateLoras(std::span<const LoraConfig> loras) override;
  bool LoraReady(std::string_view lora) override { return loras_ == nullptr || loras_->Ready(lora); }

  const GeneratorInfo& info() const override { return info_; }
  Result<std::vector<int32_t>> EncodePrompt(std::string_view text, bool add_special_tokens) const override;
  Result<std::string> RenderChat(std::span<const ChatTurn> messages, bool add_generation_prompt,
                                 std::string_view kwargs_json) const override;
  std::string TokenBytes(int32_t id) const override;
  // With the CPU kernels' vectorized greedy pick.
  std::unique_ptr<Sampler> NewSampler(const SamplingConfig& config, uint64_t seed) const override;
  Result<std::vector<float>> EmbedImage(std::string_view encoded, int threads) override;
  Status Forward(std::span<const SequenceChunk> chunks, float* logits, int threads) override;

 private:
  DecoderModel() = default;

  ModelConfig config_;
  GeneratorInfo info_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<std::string> output_bytes_;  // per id (Tokenizer::OutputBytes)
  ChatConfig chat_;
  std::unique_ptr<Llama> llama_;
  std::unique_ptr<ImagePromptEncoder> images_;  // null: a text-only model
  std::unique_ptr<LoraRegistry> loras_;
};

}  // namespace shoal::native
