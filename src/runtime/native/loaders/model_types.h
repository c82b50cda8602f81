// The Hugging Face model types (config.json's `model_type`) the native
// runtime runs. Registration sends a directory of any other type to the
// pytorch runtime, which runs it through transformers where it can import
// it (docs/runtime-protocol.md "Where a model runs"); the encoder loader
// refuses one by name rather than read it as BERT.
#pragma once

#include <string>
#include <string_view>

namespace shoal::native {

// BERT and its relatives, ModernBERT, NomicBERT, DeBERTa-v2/v3.
bool IsNativeEncoderType(std::string_view model_type);
// The Llama family the decoder runs: llama, mistral, qwen2, qwen3.
bool IsNativeDecoderType(std::string_view model_type);
// Any of those, the image towers (CLIP, SigLIP, ViT) and LLaVA; an empty
// type too (a config.json without one: the loaders decide).
bool NativeRunsModelType(std::string_view model_type);
// IsNativeEncoderType's types, comma-separated, for messages.
std::string NativeEncoderTypes();

}  // namespace shoal::native
