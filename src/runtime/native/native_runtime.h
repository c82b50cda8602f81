// The `native` runtime: Shoal's own inference engine (docs/native-runtime.md).
//
// Profile:
//   runtime: native
//   path: DIR                 # a Hugging Face directory, or USE-Lite's dist/
//   task: encode | score | extract | generate
//   native:                   # each option only where it applies (else refused)
//     precision: f32 | bf16   # dense layers' weights and GEMMs (default f32)
//     pooling: cls | mean | lasttoken  # override sentence-transformers' files
//     attention: causal | bidirectional  # a decoder embedder's, over its config
//     device: cpu | cuda[:N]  # where an encoder runs (CUDA builds)
//     lora_budget_mb: 1024    # host memory for loaded LoRA adapters
//     max_context, kv_cache_tokens, kv_block_tokens   # generators' KV cache
//
// What the directory holds decides the architecture: `config.json` with a
// BERT-family model_type → encoder (cross-encoder when its architectures
// name a *ForSequenceClassification); a Llama-family one → generator, or
// decoder embedder when registered to encode; TF.js `model.json` + `vocab.json` →
// the bundled Universal Sentence Encoder Lite.
#pragma once

#include "runtime/runtime.h"

namespace shoal {

class NativeRuntime final : public Runtime {
 public:
  std::string_view name() const override { return "native"; }
  int api_version() const override { return 17; }
  std::vector<Task> tasks() const override {
    return {Task::kEncode, Task::kScore, Task::kExtract, Task::kTokenize, Task::kGenerate};
  }
  Result<std::unique_ptr<Model>> Load(const ModelConfig& config, const LoadContext& ctx) override;
  // PEFT LoRA adapters of BERT-family encoders and Llama-family decoders
  // (lora/lora_adapter.h), checked against the base's config and tensor
  // names; USE-Lite takes none.
  Result<uint64_t> CheckLora(const ModelConfig& base, const LoraConfig& lora) override;
  // A Hugging Face tokenizer.json, or a model directory's tokenizer
  // (model_tokenizer.h: tokenizer.json, or SigLIP's spiece.model).
  Result<std::unique_ptr<TextTokenizer>> LoadTokenizer(const std::string& path) override;
};

}  // namespace shoal
