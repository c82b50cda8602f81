// Tokenizer: Hugging Face `tokenizer.json` (normalizer, pre-tokenizer, model,
// post-processor, added tokens) as one immutable object.
//
// Models: WordPiece, BPE (byte-level and byte_fallback) and Unigram. The
// semantics are those of the Rust `tokenizers` crate; the ids agree with
// @lenml/tokenizers on the real Qwen3, Llama-3 and Gemma-3 files (see
// tests/tokenizers/reference_test.sh). The "decoder", "truncation" and
// "padding" sections are not read: requests choose truncation
// (EncodeOptions), and batching pads.
//
// Errors are values: loading fails with kModelLoadFailed naming the JSON path
// at fault; encoding fails with kInvalidInput (invalid UTF-8, over
// max_length). Nothing throws. The "decoder" section is read only for
// OutputBytes (generation).
//
// Thread-safety: a loaded Tokenizer is immutable; Encode may be called from
// any number of threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::native {

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;  // 0 for the first sequence, 1 for the pair
  // Byte offsets [start, end) into the text the token came from (the first
  // or, for type 1, the second text); {0, 0} for special tokens the
  // post-processor adds. A token that covers part of a character (byte-level
  // BPE splitting an emoji) gets the bytes of that part; a character the
  // normalizer rewrote maps, whole, to the original character.
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  std::vector<uint8_t> special;     // 1 where a special token was added or matched
  uint32_t untruncated_length = 0;  // what ids.size() would be without truncation
  bool truncated = false;
};

struct EncodeOptions {
  bool add_special_tokens = true;  // the post-processor's template ([CLS] … [SEP])
  size_t max_length = 0;           // 0: no limit; else counts special tokens too
  // Over max_length: cut (longest first, for pairs) when true; else the call
  // fails with INVALID_INPUT naming both lengths.
  bool truncate = false;
};

// Token ids a caller gave, as an encoding: kept as they are (no special
// tokens added, no offsets) and held to `options`' limit as Encode holds a
// text — cut when it truncates, else INVALID_INPUT naming both lengths. An
// id outside the model's vocabulary of `vocab_size` is INVALID_INPUT too.
Result<Encoding> EncodingOfIds(std::span<const int32_t> ids, uint32_t vocab_size, const EncodeOptions& options);

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> LoadFile(const std::string& path);
  static Result<std::unique_ptr<Tokenizer>> Parse(std::string_view tokenizer_json);
  virtual ~Tokenizer() = default;

  virtual Result<Encoding> Encode(std::string_view text, const EncodeOptions& options) const = 0;
  virtual Result<Encoding> EncodePair(std::string_view first, std::string_view second,
                                      const EncodeOptions& options) const = 0;

  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;
  virtual std::string IdToToken(int32_t id) const = 0;  // "" when out of range
  // One past the largest id, added tokens included (the embedding rows).
  virtual size_t vocab_size() const = 0;
  // The model's continuing-subword prefix ("##" for WordPiece; empty where
  // it has none) and its unknown token.
  virtual std::string_view continuing_subword_prefix() const = 0;
  virtual std::optional<int32_t> unk_id() const = 0;

  // What each id (0 … vocab_size − 1) stands for in generated text, as bytes
  // (a byte-level token may hold part of a UTF-8 character); special added
  // tokens are empty, as transformers' skip_special_tokens leaves them out.
  // Fails when the "decoder" section is one that cannot be inverted here
  // (decoder.h).
  virtual Result<std::vector<std::string>> OutputBytes() const = 0;
};

}  // namespace shoal::native
