// What every runtime's Extract shares once its network has run: a token
// classifier's per-token scores grouped into entities, and a text
// classifier's logits turned into ranked labels — as transformers'
// token-classification and text-classification pipelines do, so a model
// answers here what it answers there (docs/api.md, "Extract").
//
// Entities: special tokens are left out; with aggregation none each token
// is an entity with its full label; else tokens are grouped — first into
// words (first/average/max), then adjacent tokens or words of one entity
// type into one entity (B- starts a new one, I- continues) whose score is
// the mean of its parts. Entities labelled "O" are dropped. Beyond
// transformers, IOBES labels group as the scheme says: E- (or L-) ends an
// entity, S- (or U-) is one on its own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/task.h"
#include "runtime/runtime.h"

namespace shoal {

// One token of a token classifier's output (special tokens excluded).
struct ScoredToken {
  std::span<const float> scores;  // a probability per label (softmax of the logits)
  uint32_t start = 0;             // byte offsets [start, end) into the text
  uint32_t end = 0;
  bool subword = false;           // continues the previous token's word
};

// Widens byte offsets [start, end) to whole UTF-8 characters: a byte-level
// token holding part of a character (one of an emoji's pieces) covers that
// character, as the character offsets of Hugging Face tokenizers say.
void WidenToCharacters(std::string_view text, uint32_t* start, uint32_t* end);

// transformers' is_subword for a token covering text[start, end) whose
// vocabulary piece is `piece`. A tokenizer with a continuing-subword
// prefix (WordPiece's "##": `word_aware`) tells it by the piece's length
// against the text's; other tokenizers by the characters around `start`
// (not after a space, not at the start). An unknown token starts a word.
bool IsSubword(std::string_view text, uint32_t start, uint32_t end, std::string_view piece, bool word_aware,
               bool unknown);

// The entities of `text` (see the top of this file). `labels`: the model's
// id2label, one per score.
std::vector<Entity> GroupEntities(std::string_view text, std::span<const ScoredToken> tokens,
                                  std::span<const std::string> labels, Aggregation aggregation);

// Softmax in place (computed in double).
void Softmax(std::span<float> v);

// A text classifier's labels, best first: softmax over the logits, or a
// sigmoid per label when `multi_label` (or when there is one label, as
// transformers does); the first `top_k` (0: all).
std::vector<LabelScore> RankLabels(std::span<const float> logits, std::span<const std::string> labels,
                                   bool multi_label, uint32_t top_k);

}  // namespace shoal
