// tokenizer.json (runtime/native/tokenizers/tokenizer.h: Tokenizer::Parse).
// When it parses: Encode a short text (with and without special tokens,
// truncated), EncodePair, and OutputBytes. What must hold: ids are within
// the vocabulary, the per-token vectors have one entry per id, offsets lie
// within the text, truncation respects max_length, and OutputBytes has one
// entry per id.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "runtime/native/tokenizers/tokenizer.h"

namespace {

using shoal::native::Encoding;

void CheckEncoding(const Encoding& e, size_t vocab, size_t first_len, size_t second_len) {
  const size_t n = e.ids.size();
  FUZZ_CHECK(e.type_ids.size() == n && e.offsets.size() == n && e.special.size() == n);
  for (size_t i = 0; i < n; ++i) {
    FUZZ_CHECK(e.ids[i] >= 0 && static_cast<size_t>(e.ids[i]) < vocab);
    // Type ids are the file's (any value, as in the Rust crate; the model
    // checks them against its type vocabulary), so they cannot tell which
    // text an offset belongs to: check against the longer.
    FUZZ_CHECK(e.offsets[i].first <= e.offsets[i].second &&
               e.offsets[i].second <= std::max(first_len, second_len));
  }
  FUZZ_CHECK(e.untruncated_length >= n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::native;
  auto tok = Tokenizer::Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!tok.ok()) return 0;
  const Tokenizer& t = **tok;
  const size_t vocab = t.vocab_size();
  const std::string text = "Hello, world! naïve café 123 — 日本語 😀  <s> [CLS]";
  const std::string pair = "second\tsegment";

  EncodeOptions plain;
  auto e = t.Encode(text, plain);
  if (e.ok()) CheckEncoding(*e, vocab, text.size(), 0);
  EncodeOptions bare;
  bare.add_special_tokens = false;
  auto b = t.Encode(text, bare);
  if (b.ok()) CheckEncoding(*b, vocab, text.size(), 0);
  EncodeOptions cut;
  cut.max_length = 5;
  cut.truncate = true;
  auto c = t.Encode(text, cut);
  if (c.ok()) {
    CheckEncoding(*c, vocab, text.size(), 0);
    FUZZ_CHECK(c->ids.size() <= 5 || c->untruncated_length == c->ids.size());
  }
  auto p = t.EncodePair(text, pair, plain);
  if (p.ok()) CheckEncoding(*p, vocab, text.size(), pair.size());

  auto out = t.OutputBytes();
  if (out.ok()) FUZZ_CHECK(out->size() == vocab);
  for (size_t id = 0; id < vocab && id < 64; ++id) {
    const std::string token = t.IdToToken(static_cast<int32_t>(id));
    (void)t.TokenToId(token);
  }
  return 0;
}
