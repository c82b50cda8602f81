#include "runtime/native/tokenizers/tokenize_task.h"

namespace shoal::native {

Status RunTokenize(const Tokenizer& tokenizer, std::span<const TokenizeInput> in,
                   std::span<TokenizeOutput> out) {
  for (size_t i = 0; i < in.size(); ++i) {
    EncodeOptions o;
    o.add_special_tokens = in[i].add_special_tokens;
    auto e = tokenizer.Encode(in[i].text, o);
    if (!e.ok()) {
      out[i].status = e.status();
      continue;
    }
    out[i].status = Status::Ok();
    out[i].tokens.reserve(e->ids.size());
    for (size_t k = 0; k < e->ids.size(); ++k) {
      Token t;
      t.id = e->ids[k];
      t.text = tokenizer.IdToToken(t.id);
      t.special = e->special[k] != 0;
      // Specials the template added have no place in the text; those
      // matched in it do.
      t.has_offsets = !(t.special && e->offsets[k].first == 0 && e->offsets[k].second == 0);
      t.start = e->offsets[k].first;
      t.stop = e->offsets[k].second;
      out[i].tokens.push_back(std::move(t));
    }
  }
  return Status::Ok();
}

}  // namespace shoal::native
