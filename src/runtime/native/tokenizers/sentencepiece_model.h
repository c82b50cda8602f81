// A SentencePiece model file (`spiece.model`, `sentencepiece.bpe.model`,
// `spm.model`): the serialized ModelProto, read without protobuf's library.
// Only what a tokenizer needs is kept — the pieces, the trainer's model type,
// special ids and byte fallback, and the normalizer's rules and flags; the
// rest (the trainer's other options, self-test data) is skipped.
//
// The file is untrusted input: every length is checked against the bytes
// left, and a malformed file is kModelLoadFailed naming what is wrong.
//
// Threading: a parsed model is a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::native::tok {

struct SentencePieceModel {
  // SentencePiece's piece types (sentencepiece_model.proto's numbering).
  enum class PieceType : uint8_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6
  };
  enum class ModelType : uint8_t { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };
  struct Piece {
    std::string piece;
    float score = 0.0f;
    PieceType type = PieceType::kNormal;
  };

  std::vector<Piece> pieces;  // ids are positions
  ModelType model_type = ModelType::kUnigram;
  bool byte_fallback = false;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;  // -1: none

  // The normalizer: its rule set's name ("nmt_nfkc", "identity", ...), the
  // compiled rules (precompiled_charsmap.h's blob, empty for none) and
  // what it does with whitespace.
  std::string normalizer_name;
  std::string precompiled_charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// `what` names the file in errors ("spiece.model").
Result<SentencePieceModel> ParseSentencePieceModel(std::string_view bytes, std::string_view what);

}  // namespace shoal::native::tok
