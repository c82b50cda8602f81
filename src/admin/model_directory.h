// A model directory in the Hugging Face layout → the ModelSpec that registers
// it. The directory's own `shoal.yaml` profile wins where there is one (its
// `path` defaults to the directory); without one the profile is inferred as
// Hugging Face tools would read the directory: the runtime from the weights'
// format (model.safetensors: native, or pytorch — transformers — for a
// model_type native does not run; model.onnx or onnx/model.onnx: onnx;
// a TorchScript model.pt, model.torchscript or traced_model.pt: pytorch),
// and the task from config.json's architectures (a *ForSequenceClassification
// head is a cross-encoder: `score`; a *ForCausalLM a generator: `generate`;
// anything else `encode`; a CLIPModel or SiglipModel also scores a text
// against images, `image_text_score`).
//
// A profile (a shoal.yaml, or a profile file naming the directory) says what
// it says; what it leaves unsaid of an encoder — its outputs, its
// prompts, whether it scores texts against images — is read from the
// directory's files as without a profile (CompleteFromFiles).
//
// This only names the model; whether its files are complete and consistent is
// the runtime's to say (catalog_admin.h loads it before it is registered).
#pragma once

#include <string>
#include <string_view>

#include "catalog/model_spec.h"

namespace shoal::admin {

// `id` (may be empty) overrides the profile's id or, without a profile, the
// default: the directory's name.
Result<ModelSpec> SpecFromDirectory(const std::string& dir, std::string_view id = {});

// A file (a profile) or a directory (a model): what `shoal models add` and
// POST /v1/admin/models take.
Result<ModelSpec> SpecFromPath(const std::string& path, std::string_view id = {});

// Fills what a profile left unsaid of an encoder in a Hugging Face
// directory (outputs, prompts, image_text_score) from the directory's files;
// anything else it leaves as it is. `shoal up`'s profiles go through it too.
Status CompleteFromFiles(ModelSpec* spec);

}  // namespace shoal::admin
