// GrammarCache: the TokenGrammars (token_grammar.h) of one model's
// vocabulary, compiled once per GBNF text and kept, the kMaxGrammars most
// recently used. The vocabulary's trie is built at the first use: a model
// that is never asked for a format pays nothing.
//
// Threading: not thread-safe; one per generation engine, used from its
// thread only (as the TokenGrammars it hands out are).
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/structured/token_grammar.h"

namespace shoal::structured {

class GrammarCache {
 public:
  static constexpr size_t kMaxGrammars = 16;

  // `vocabulary()`: what each token id stands for, as bytes.
  explicit GrammarCache(std::function<std::vector<std::string>()> vocabulary);

  // INVALID_INPUT (naming `field`) when the text does not compile.
  Result<std::shared_ptr<TokenGrammar>> Get(const std::string& gbnf, const std::string& field);

 private:
  std::function<std::vector<std::string>()> vocabulary_;
  std::shared_ptr<const TokenTrie> trie_;
  std::list<std::pair<std::string, std::shared_ptr<TokenGrammar>>> grammars_;  // most recent first
};

}  // namespace shoal::structured
