// Pre-tokenizers: the tokenizer.json "pre_tokenizer" stage, which cuts the
// normalized text into the pieces ("words") the model encodes one by one.
// Supported: BertPreTokenizer, Whitespace, WhitespaceSplit, ByteLevel, Split,
// Metaspace, Digits, Punctuation, CharDelimiterSplit, Sequence.
//
// Pieces are byte ranges of one NormalizedString (the "arena"). A
// pre-tokenizer that changes a piece's text (Metaspace's "▁", ByteLevel's
// prefix space) appends the new text to the arena with its alignment and
// points the piece at it, so splitting never copies text.
//
// ByteLevel's byte-to-unicode mapping is not applied to the text: the BPE
// model is loaded with its vocabulary mapped back to raw bytes instead
// (bpe.h), which gives the same tokens without rewriting every piece.
//
// Threading: a parsed PreTokenizer is immutable; PreTokenize may run on many
// threads at once.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/native/tokenizers/json_util.h"
#include "runtime/native/tokenizers/normalized_string.h"

namespace shoal::native::tok {

struct PreTokenized {
  NormalizedString arena;
  std::vector<Range> pieces;  // into arena.text(), in order, never empty

  std::string_view Text(Range r) const {
    return std::string_view(arena.text()).substr(r.start, r.end - r.start);
  }
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual Status PreTokenize(PreTokenized& pt) const = 0;
  // Whether this is (or contains) a ByteLevel pre-tokenizer: the model then
  // reads its vocabulary as GPT-2 byte-level strings.
  virtual bool byte_level() const { return false; }
};

Result<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(Json json, std::string_view where);

}  // namespace shoal::native::tok
