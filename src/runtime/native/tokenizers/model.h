// Model: the tokenizer.json "model" stage, which turns one pre-tokenized piece
// into token ids (WordPiece, BPE, Unigram), and ParseModel, which picks the
// implementation from "type".
//
// Threading: a parsed Model is immutable; Tokenize may run on many threads
// at once (implementations keep their scratch space thread_local).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/native/tokenizers/json_util.h"

namespace shoal::native::tok {

// A token of one piece: id and byte range [start, end) inside the piece.
struct ModelToken {
  int32_t id;
  uint32_t start;
  uint32_t end;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the tokens of `piece` (non-empty, valid UTF-8).
  virtual void Tokenize(std::string_view piece, std::vector<ModelToken>& out) const = 0;
  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;
  virtual std::string_view IdToToken(int32_t id) const = 0;  // "" when unknown
  virtual size_t id_space() const = 0;                       // one past the largest id
  // The prefix marking a word's later pieces ("##"), empty where the model
  // has none: what tells a token-classification pipeline a word's pieces.
  virtual std::string_view continuing_subword_prefix() const { return {}; }
  virtual std::optional<int32_t> unk_id() const = 0;
};

// `byte_level`: the pre-tokenizer contains ByteLevel, so the vocabulary is in
// GPT-2's byte-to-unicode alphabet (only BPE supports it).
Result<std::unique_ptr<Model>> ParseModel(Json json, bool byte_level);

// Per-model constructors, parsed from the "model" object.
Result<std::unique_ptr<Model>> ParseBpe(Json json, bool byte_level);
Result<std::unique_ptr<Model>> ParseWordPiece(Json json);
Result<std::unique_ptr<Model>> ParseUnigram(Json json);

}  // namespace shoal::native::tok
