// What a model is asked to do. A profile names the task its model serves
// (encode, score, extract or generate); a work item names the task it asks
// for, and tokenize may be asked of any model.
#pragma once

#include <cstdint>
#include <string_view>

namespace shoal {

enum class Task : uint8_t {
  kEncode,    // a vector per text (embedders)
  kScore,     // a relevance logit per text pair (cross-encoders)
  kTokenize,  // the model's tokens (debugging; any model)
  kGenerate,  // text from a prompt or a conversation (decoders)
  kExtract,   // entities (token classifiers, NER) or labels (text classifiers) of a text
};

// "encode", "score", "tokenize", "generate", "extract".
std::string_view TaskName(Task task);
// False for any other name.
bool ParseTask(std::string_view name, Task* task);

// How extract groups a token classifier's per-token labels into entities:
// transformers' aggregation_strategy, with its names.
enum class Aggregation : uint8_t {
  kNone,     // every token, its own label (B-/I- prefixes kept)
  kSimple,   // adjacent tokens of one entity type merged; score: their mean
  kFirst,    // a word takes its first token's label, then as simple
  kAverage,  // a word takes the label of its tokens' mean scores
  kMax,      // a word takes the label of its highest-scoring token
};

// "none", "simple", "first", "average", "max".
std::string_view AggregationName(Aggregation a);
bool ParseAggregation(std::string_view name, Aggregation* a);

}  // namespace shoal
