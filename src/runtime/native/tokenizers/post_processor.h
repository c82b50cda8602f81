// Post-processors: the tokenizer.json "post_processor" stage, which wraps the
// encoded sequence(s) in special tokens and sets type ids: TemplateProcessing,
// BertProcessing, RobertaProcessing, ByteLevel (offsets only), Sequence.
//
// Two independent jobs, kept apart: trimming offsets over spaces (ByteLevel,
// Roberta with trim_offsets) works on each sequence alone; adding special
// tokens builds the final layout. The tokenizer trims first, then lays out,
// which is what the Rust crate's Sequence[ByteLevel, Template] does.
//
// Threading: immutable after parsing; any number of threads may call it.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/native/tokenizers/json_util.h"
#include "runtime/native/tokenizers/tokenizer.h"

namespace shoal::native::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // How many special tokens AddSpecialTokens adds (truncation leaves room).
  virtual size_t AddedTokens(bool pair) const { return 0; }
  // Whether token offsets are trimmed of leading/trailing spaces.
  virtual bool trims_offsets() const { return false; }
  // The largest id AddSpecialTokens may add; -1 when it adds none. The
  // tokenizer refuses a file whose special ids lie outside its vocabulary.
  virtual int32_t MaxSpecialId() const { return -1; }
  // `encs` holds the first sequence (type ids 0) and maybe the second (type
  // ids 1); afterwards it holds the final pieces, concatenated in order.
  virtual void AddSpecialTokens(std::vector<Encoding>& encs, bool add_special_tokens) const {}
};

Result<std::unique_ptr<PostProcessor>> ParsePostProcessor(Json json, std::string_view where);

// Moves each token's offsets past spaces at its edges within `text`.
void TrimOffsets(Encoding& enc, std::string_view text);

}  // namespace shoal::native::tok
