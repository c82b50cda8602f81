// TokenFeed: Shoal's side of a model in a runtime that takes tokens (its
// hello says "input": "tokens"; docs/runtime-protocol.md): a tensor engine
// such as ONNX Runtime or TorchScript has no tokenizer, so the model
// directory's tokenizer (model_tokenizer.h) turns texts into ids here — the tokenizer, the
// limit and the truncation the native runtime uses — and the runtime sees
// only ids. An input that fails to tokenize (too long without `truncate`)
// fails here and is not sent; the tokens and truncation reported per item
// are the ones counted here. Tokenize is answered here, without the runtime.
//
// Threading: immutable after Open and CapTokens; any thread.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/process/protocol.h"
#include "runtime/runtime.h"

namespace shoal::runtime_process {

class TokenFeed {
 public:
  // Reads the tokenizer of `config.path` (the directory, or the directory of
  // the model file it names): its tokenizer.json, or its slow tokenizer's
  // files converted. MODEL_LOAD_FAILED without one.
  static Result<std::unique_ptr<TokenFeed>> Open(const ModelConfig& config);

  // The runtime's own limit for the model (its position table; 0: none),
  // under the profile's max_input_tokens. Called once, before any batch.
  void CapTokens(uint32_t max_tokens);

  // One batch's inputs as the runtime gets them.
  struct Batch {
    std::vector<size_t> sent;                 // the indices of the inputs sent, in order
    std::vector<native::Encoding> encodings;  // theirs
    std::vector<TokenInput> inputs;           // views into `encodings`; empty: nothing to send
  };
  // Tokenizes `in`; an input that fails gets its status in `out` and is not sent.
  Batch Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) const;
  Batch Score(std::span<const ScoreInput> in, std::span<ScoreOutput> out) const;
  // Fills the sent items of `out` from the runtime's "ok" map. An error
  // (INTERNAL) when the reply does not fit the batch: a runtime at fault.
  static Status ReadEncode(std::string_view ok, const Batch& batch, std::span<EncodeOutput> out);
  static Status ReadScore(std::string_view ok, const Batch& batch, std::span<ScoreOutput> out);

  Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) const;

 private:
  TokenFeed(std::unique_ptr<native::Tokenizer> tokenizer, uint32_t max_tokens)
      : tokenizer_(std::move(tokenizer)), max_tokens_(max_tokens) {}

  native::EncodeOptions LimitFor(bool truncate) const;

  const std::unique_ptr<native::Tokenizer> tokenizer_;
  uint32_t max_tokens_;
};

}  // namespace shoal::runtime_process
