// The Tokenize task (runtime.h) for any native model with a tokenizer.json:
// every model answers /v1/tokenize the same way. And the tokenizing step
// of the other tasks.
#pragma once

#include <span>
#include <vector>

#include "runtime/call_stages.h"
#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/runtime.h"

namespace shoal::native {

Status RunTokenize(const Tokenizer& tokenizer, std::span<const TokenizeInput> in,
                   std::span<TokenizeOutput> out);

// Tokenizes every input with `encode` into `encodings`; an input that fails
// gets its status in `out`. Returns the indices that tokenized. Its time is
// the call's tokenize stage (runtime/call_stages.h).
template <class In, class Out, class EncodeFn>
std::vector<size_t> TokenizeAll(std::span<const In> in, std::span<Out> out, std::vector<Encoding>& encodings,
                                EncodeFn encode) {
  StageTimer tokenizing(&ThisCallStages().tokenize_us);
  std::vector<size_t> ok;
  for (size_t i = 0; i < in.size(); ++i) {
    auto e = encode(in[i]);
    if (!e.ok()) {
      out[i].status = e.status();
      continue;
    }
    encodings[i] = std::move(e).value();
    ok.push_back(i);
  }
  return ok;
}

}  // namespace shoal::native
