// llama.cpp handles owned through unique_ptr, and the vocabulary helpers
// both kinds of model use: text to token ids, a token's text, and the
// Tokenize task.
//
// Threading: llama.cpp's vocabulary is immutable once loaded; these read it
// from any thread.
#pragma once

#include <llama.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/runtime.h"

namespace shoal::llamacpp {

struct ModelFree {
  void operator()(llama_model* m) const { llama_model_free(m); }
};
struct ContextFree {
  void operator()(llama_context* c) const { llama_free(c); }
};
struct SamplerFree {
  void operator()(llama_sampler* s) const { llama_sampler_free(s); }
};
using ModelPtr = std::unique_ptr<llama_model, ModelFree>;
using ContextPtr = std::unique_ptr<llama_context, ContextFree>;
using SamplerPtr = std::unique_ptr<llama_sampler, SamplerFree>;

// `text` as token ids. `parse_special`: special tokens spelled in the text
// (e.g. "<|im_start|>") are those tokens, not their characters.
Result<std::vector<int32_t>> TokenizeText(const llama_vocab* vocab, std::string_view text, bool add_special,
                                          bool parse_special);

// The bytes token `id` stands for; with `special` false, control tokens
// (end-of-sequence markers and the like) give nothing.
std::string TokenPiece(const llama_vocab* vocab, int32_t id, bool special);

// Model::Tokenize over a vocabulary (ids, pieces, special flags; llama.cpp
// gives no offsets).
Status TokenizeItems(const llama_vocab* vocab, std::span<const TokenizeInput> in, std::span<TokenizeOutput> out);

// A string of the GGUF's metadata; empty when absent.
std::string MetaString(const llama_model* model, const char* key);

}  // namespace shoal::llamacpp
