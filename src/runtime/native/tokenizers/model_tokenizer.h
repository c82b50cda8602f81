// The tokenizer of a model directory: its tokenizer.json, or — where a
// checkpoint ships only a slow tokenizer's files, as SigLIP's and many older
// BERT and RoBERTa fine-tunes do — what AutoTokenizer would make of them:
// BERT's and MPNet's vocab.txt, RoBERTa's vocab.json + merges.txt, XLM-R's
// sentencepiece.bpe.model and DeBERTa's spm.model as transformers'
// converters write them (converted_tokenizers.h), SigLIP's spiece.model as
// its slow tokenizer reads it (siglip_tokenizer.h). The slow tokenizer is
// the one tokenizer_config.json names, else the one config.json's
// model_type maps to.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/native/tokenizers/tokenizer.h"

namespace shoal::native {

// kModelLoadFailed names the file at fault, or the slow tokenizer class not
// converted here; a directory that names none names tokenizer.json.
Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& dir);

}  // namespace shoal::native
