// SigLIP's tokenizer from its SentencePiece model: what transformers'
// SiglipTokenizer (the slow, and only, tokenizer SigLIP checkpoints name in
// tokenizer_config.json) does to a text, written as a tokenizer.json the
// Tokenizer loads — the way a converter makes a fast tokenizer of a slow one.
//
// SiglipTokenizer: ASCII punctuation removed, runs of whitespace made one
// space, the ends stripped (canonicalize_text); lower-cased when
// do_lower_case; a "▁" put in front; SentencePiece with the model's rules
// and no dummy prefix of its own; "</s>" appended. The tokenizer.json says
// the same with Replace, Strip, Lowercase, Precompiled and Metaspace, so
// offsets still point into the caller's text.
#pragma once

#include <string>

#include "common/status.h"
#include "runtime/native/tokenizers/sentencepiece_model.h"

namespace shoal::native::tok {

struct SiglipTokenizerOptions {
  bool do_lower_case = true;
  std::string eos_token = "</s>";  // appended to every text
};

// A Unigram model that escapes whitespace as "▁" only (SigLIP's);
// user-defined pieces are refused (they would be matched as whole words
// before the model). kModelLoadFailed names what does not fit. Control and
// unused pieces stay in the vocabulary, as converters keep them: no text
// spells a control piece once its punctuation is gone.
Result<std::string> SiglipTokenizerJson(const SentencePieceModel& model,
                                        const SiglipTokenizerOptions& options);

}  // namespace shoal::native::tok
