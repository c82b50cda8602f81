// The `native` runtime: Shoal's own inference engine (see DESIGN.md).
//
// Profile:
//   runtime: native
//   path: DIR                 # a Hugging Face directory, or USE-Lite's dist/
//   task: encode | score      # score: a cross-encoder (sequence classifier)
//   native:
//     precision: f32 | bf16   # dense layers' weights and GEMMs (default f32)
//     pooling: cls | mean     # override sentence-transformers' files
//
// What the directory holds decides the architecture: `config.json` with a
// BERT-family model_type → encoder (cross-encoder when its architectures
// name a *ForSequenceClassification); TF.js `model.json` + `vocab.json` →
// the bundled Universal Sentence Encoder Lite.
#pragma once

#include "runtime/runtime.h"

namespace shoal {

class NativeRuntime final : public Runtime {
 public:
  std::string_view name() const override { return "native"; }
  Result<std::unique_ptr<Model>> Load(const ModelSpec& spec, const LoadContext& ctx) override;
};

}  // namespace shoal
