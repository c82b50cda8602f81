#include "runtime/extraction.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace shoal {
namespace {

bool Continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

size_t CodePoints(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return !Continuation(c); }));
}

// A token or word with its chosen label, before entities are grouped.
struct Labelled {
  size_t label = 0;
  float score = 0;
  uint32_t start = 0;
  uint32_t end = 0;
};

size_t ArgMax(std::span<const float> v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

Labelled OfToken(const ScoredToken& t) {
  const size_t k = ArgMax(t.scores);
  return {k, t.scores[k], t.start, t.end};
}

// One word (tokens [first, last]) by `aggregation` (first, average, max).
Labelled OfWord(std::span<const ScoredToken> word, Aggregation aggregation) {
  Labelled w;
  if (aggregation == Aggregation::kAverage) {
    std::vector<double> mean(word[0].scores.size(), 0.0);
    for (const ScoredToken& t : word) {
      for (size_t k = 0; k < mean.size(); ++k) mean[k] += t.scores[k];
    }
    w.label = static_cast<size_t>(std::max_element(mean.begin(), mean.end()) - mean.begin());
    w.score = static_cast<float>(mean[w.label] / word.size());
  } else {
    const ScoredToken* chosen = &word[0];
    if (aggregation == Aggregation::kMax) {
      for (const ScoredToken& t : word) {
        if (t.scores[ArgMax(t.scores)] > chosen->scores[ArgMax(chosen->scores)]) chosen = &t;
      }
    }
    w = OfToken(*chosen);
  }
  w.start = word.front().start;
  w.end = word.back().end;
  return w;
}

// A label's place in its entity: B begins one, I continues, E continues and
// ends, S is one alone; a label without a prefix continues (as transformers
// reads it).
struct Tag {
  char position;
  std::string_view type;
};

Tag TagOf(std::string_view label) {
  if (label.size() > 2 && label[1] == '-') {
    switch (label[0]) {
      case 'B': return {'B', label.substr(2)};
      case 'I': return {'I', label.substr(2)};
      case 'E': case 'L': return {'E', label.substr(2)};
      case 'S': case 'U': return {'S', label.substr(2)};
    }
  }
  return {'I', label};
}

// The entity type a group is named by: its first label after the first
// '-' (transformers' split("-", 1)[-1]).
std::string_view EntityType(std::string_view label) {
  const size_t dash = label.find('-');
  return dash == std::string_view::npos ? label : label.substr(dash + 1);
}

// Appends the entity `label` over text[start, end) (bytes), its offsets in
// code points; an "O" (outside) span is no entity.
void AddEntity(std::string_view text, std::string_view label, float score, uint32_t start, uint32_t end,
               std::vector<Entity>* out) {
  if (label == "O") return;
  Entity& e = out->emplace_back();
  e.label = std::string(label);
  e.score = score;
  start = std::min<uint32_t>(start, static_cast<uint32_t>(text.size()));
  end = std::clamp<uint32_t>(end, start, static_cast<uint32_t>(text.size()));
  e.start = static_cast<uint32_t>(CodePoints(text.substr(0, start)));
  e.end = e.start + static_cast<uint32_t>(CodePoints(text.substr(start, end - start)));
  e.text = std::string(text.substr(start, end - start));
}

}  // namespace

void WidenToCharacters(std::string_view text, uint32_t* start, uint32_t* end) {
  const uint32_t size = static_cast<uint32_t>(text.size());
  *start = std::min(*start, size);
  *end = std::clamp(*end, *start, size);
  while (*start > 0 && *start < size && Continuation(text[*start])) --*start;
  while (*end < size && Continuation(text[*end])) ++*end;
}

bool IsSubword(std::string_view text, uint32_t start, uint32_t end, std::string_view piece, bool word_aware,
               bool unknown) {
  if (unknown || start >= text.size() || end < start) return false;
  if (word_aware) return CodePoints(piece) != CodePoints(text.substr(start, std::min<size_t>(end, text.size()) - start));
  // A space is one byte in UTF-8, never part of another character.
  return start > 0 && text[start - 1] != ' ' && text[start] != ' ';
}

std::vector<Entity> GroupEntities(std::string_view text, std::span<const ScoredToken> tokens,
                                  std::span<const std::string> labels, Aggregation aggregation) {
  std::vector<Labelled> parts;
  if (aggregation == Aggregation::kNone || aggregation == Aggregation::kSimple) {
    for (const ScoredToken& t : tokens) parts.push_back(OfToken(t));
  } else {
    size_t first = 0;
    for (size_t i = 1; i <= tokens.size(); ++i) {
      if (i < tokens.size() && tokens[i].subword) continue;
      if (i > first) parts.push_back(OfWord(tokens.subspan(first, i - first), aggregation));
      first = i;
    }
  }
  std::vector<Entity> entities;
  if (aggregation == Aggregation::kNone) {
    for (const Labelled& p : parts) AddEntity(text, labels[p.label], p.score, p.start, p.end, &entities);
    return entities;
  }
  // Adjacent parts of one type: one entity, its score their mean.
  for (size_t i = 0; i < parts.size();) {
    size_t j = i + 1;
    Tag last = TagOf(labels[parts[i].label]);
    for (; j < parts.size(); ++j) {
      const Tag tag = TagOf(labels[parts[j].label]);
      const bool continues = (tag.position == 'I' || tag.position == 'E') && last.position != 'E' &&
                             last.position != 'S' && tag.type == last.type;
      if (!continues) break;
      last = tag;
    }
    double sum = 0;
    for (size_t k = i; k < j; ++k) sum += parts[k].score;
    AddEntity(text, EntityType(labels[parts[i].label]), static_cast<float>(sum / (j - i)), parts[i].start,
              parts[j - 1].end, &entities);
    i = j;
  }
  return entities;
}

void Softmax(std::span<float> v) {
  if (v.empty()) return;
  const float max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (float x : v) sum += std::exp(static_cast<double>(x) - max);
  for (float& x : v) x = static_cast<float>(std::exp(static_cast<double>(x) - max) / sum);
}

std::vector<LabelScore> RankLabels(std::span<const float> logits, std::span<const std::string> labels,
                                   bool multi_label, uint32_t top_k) {
  std::vector<float> scores(logits.begin(), logits.end());
  if (multi_label || scores.size() == 1) {
    for (float& x : scores) x = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
  } else {
    Softmax(scores);
  }
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  if (top_k > 0 && top_k < order.size()) order.resize(top_k);
  std::vector<LabelScore> out;
  out.reserve(order.size());
  for (size_t k : order) out.push_back({labels[k], scores[k]});
  return out;
}

}  // namespace shoal
