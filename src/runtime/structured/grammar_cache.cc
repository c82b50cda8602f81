#include "runtime/structured/grammar_cache.h"

#include "runtime/structured/gbnf.h"

namespace shoal::structured {

GrammarCache::GrammarCache(std::function<std::vector<std::string>()> vocabulary)
    : vocabulary_(std::move(vocabulary)) {}

Result<std::shared_ptr<TokenGrammar>> GrammarCache::Get(const std::string& gbnf, const std::string& field) {
  for (auto it = grammars_.begin(); it != grammars_.end(); ++it) {
    if (it->first != gbnf) continue;
    grammars_.splice(grammars_.begin(), grammars_, it);
    return grammars_.front().second;
  }
  SHOAL_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, CompileGbnf(gbnf, field));
  if (!trie_) trie_ = std::make_shared<const TokenTrie>(vocabulary_());
  grammars_.emplace_front(gbnf, std::make_shared<TokenGrammar>(std::move(grammar), trie_));
  if (grammars_.size() > kMaxGrammars) grammars_.pop_back();
  return grammars_.front().second;
}

}  // namespace shoal::structured
