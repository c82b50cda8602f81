// OutputGrammars: the grammar samplers that hold a job's output to its
// format (runtime/structured/json_schema_grammar.h), compiled once per format and schema and cloned
// for each job (llama.cpp parses a grammar when it makes the sampler; a
// clone copies the parsed rules). Each job's sampler is a chain: the UTF-8
// guard (utf8_guard.h), then the grammar.
//
// Threading: Get from any thread (mu_ guards the compiled samplers).
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "runtime/llamacpp/utf8_guard.h"
#include "runtime/llamacpp/vocab.h"
#include "runtime/streaming_generator.h"

namespace shoal::llamacpp {

class OutputGrammars {
 public:
  explicit OutputGrammars(const llama_vocab* vocab) : vocab_(vocab) {}

  // A fresh sampler that holds a sequence's output to `format` (null for
  // text); INVALID_INPUT for a schema outside the subset or one llama.cpp
  // refuses.
  Result<SamplerPtr> Get(const OutputFormat& format);

 private:
  static constexpr size_t kCapacity = 64;  // schemas kept compiled

  const llama_vocab* const vocab_;
  std::mutex mu_;
  std::map<std::string, SamplerPtr> compiled_;  // by format and schema; guarded by mu_
  std::deque<std::string> order_;               // oldest first, for eviction; guarded by mu_
  std::shared_ptr<const Utf8Table> utf8_;       // made at the first format; guarded by mu_
};

}  // namespace shoal::llamacpp
