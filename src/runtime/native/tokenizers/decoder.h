// PieceDecoder: tokenizer.json "decoder" — how a token's vocabulary piece
// becomes the bytes of generated text.
//
// Supported: ByteLevel (GPT-2's byte alphabet mapped back to bytes: Llama-3,
// Qwen), and the SentencePiece-style Sequence of Replace("▁" → " "),
// ByteFallback ("<0x0A>" → the byte), Fuse and Strip (Llama-2, Mistral,
// Gemma), or Metaspace. Strip (of the first leading space of a whole text)
// is not applied: generated text continues a prompt, so its first space is
// real — what incremental detokenizers (vLLM, TGI) do too. Anything else is
// an error when a generator asks for the table, not a wrong output.
//
// Threading: immutable after Parse.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/native/tokenizers/json_util.h"

namespace shoal::native::tok {

class PieceDecoder {
 public:
  // `decoder` is the "decoder" field (absent: unsupported).
  static PieceDecoder Parse(std::optional<Json> decoder);

  // Why Bytes cannot be trusted, or OK.
  const Status& status() const { return status_; }
  std::string Bytes(std::string_view piece) const;

 private:
  Status Add(Json step, std::string_view where);

  Status status_ = Status::Ok();
  bool byte_level_ = false;
  bool byte_fallback_ = false;
  std::vector<std::pair<std::string, std::string>> replace_;  // pattern → content, in order
};

}  // namespace shoal::native::tok
