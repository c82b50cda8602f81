// What a model is asked to do. A profile names the task its model serves
// (encode, score, extract or generate); a work item names the task it asks
// for, and tokenize may be asked of any model.
#pragma once

#include <cstdint>
#include <string>
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

// What encode gives for an item: a dense vector (embedders), a sparse
// vector over the vocabulary (SPLADE), a vector per token (ColBERT). A
// request may ask for several at once (OutputKinds, a set of bits); a model
// produces those its profile lists (`outputs:`; none listed: dense).
enum class OutputKind : uint8_t { kDense = 1, kSparse = 2, kMultivector = 4 };
using OutputKinds = uint8_t;
inline constexpr OutputKinds kAllOutputKinds = 7;
// Every kind, in the order lists, names and defaults use.
inline constexpr OutputKind kOutputKindOrder[] = {OutputKind::kDense, OutputKind::kSparse, OutputKind::kMultivector};
inline bool Has(OutputKinds set, OutputKind k) { return (set & static_cast<OutputKinds>(k)) != 0; }

// "dense", "sparse", "multivector".
std::string_view OutputKindName(OutputKind k);
bool ParseOutputKind(std::string_view name, OutputKind* k);
// The set's names joined with ", " ("dense, sparse"), in that order.
std::string OutputKindsText(OutputKinds set);
// What a request that names no output gets: dense when the set has it,
// else sparse, else multivector.
OutputKind DefaultOutput(OutputKinds set);

// What an encode input is, for a model that encodes queries and documents
// differently (ColBERT: its markers, query expansion, skiplist); a prompt
// by the same name (the gateway puts it before the text) serves the others.
enum class InputRole : uint8_t { kUnspecified, kQuery, kDocument };
// "", "query", "document".
std::string_view InputRoleName(InputRole r);
bool ParseInputRole(std::string_view name, InputRole* r);

}  // namespace shoal
