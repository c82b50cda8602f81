// Evaluations: a set of examples with thresholds (JSONL, docs/evaluations.md)
// run through the real serving path against one version of a model; what
// gates a version's promotion (catalog_admin.h).
//
//   {"evaluation": "name", "task": "retrieval", "thresholds": {"ndcg@10": 0.6}}   first line
//   retrieval       {"doc": "d1", "text": "..."}  {"query": "...", "relevant": ["d1"]}
//                   → ndcg@10, recall@10, mrr@10 (cosine of /v1/embeddings)
//   similarity      {"a": "...", "b": "...", "score": 4.2} → spearman
//   reranking       {"query": "...", "documents": ["..."], "relevant": [0]}
//                   → mrr@10, ndcg@10 (/v1/rerank)
//   classification  {"text": "...", "label": "positive"} → accuracy, macro_f1
//                   (/v1/extract, the best label)
//   ner             {"text": "...", "entities": [{"start": 0, "end": 12, "label": "PER"}]}
//                   → f1, precision, recall of exact spans (/v1/extract, simple)
//   generation      {"prompt": "...", "reference": "..."} → exact_match,
//                   json_valid, rouge_l (/v1/chat/completions, greedy,
//                   the header's "max_tokens", default 64)
//
// The header may also carry "source" (where the examples come from). A
// threshold names one of the task's measures and is its minimum.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::admin {

struct EvalSet {
  std::string name;
  std::string task;  // retrieval, similarity, reranking, classification, ner, generation
  std::string source;
  std::map<std::string, double> thresholds;  // measure → minimum
  uint32_t max_tokens = 64;                  // generation
  std::string text;                          // the JSONL as given

  struct Doc {
    std::string id, text;
  };
  struct Query {
    std::string text;
    std::vector<std::string> relevant;  // doc ids
  };
  struct Pair {
    std::string a, b;
    double score = 0;
  };
  struct Rerank {
    std::string query;
    std::vector<std::string> documents;
    std::vector<size_t> relevant;  // indices into documents
  };
  struct Span {
    uint32_t start = 0, end = 0;
    std::string label;
  };
  struct Example {
    std::string text, label;     // classification
    std::vector<Span> entities;  // ner
    std::string reference;       // generation (text is the prompt)
  };
  std::vector<Doc> docs;
  std::vector<Query> queries;
  std::vector<Pair> pairs;
  std::vector<Rerank> reranks;
  std::vector<Example> examples;

  size_t size() const { return queries.size() + pairs.size() + reranks.size() + examples.size(); }
};

// Strict: INVALID_INPUT naming the line of anything amiss (an unknown
// task, measure or field; a query whose relevant docs are not in the set).
Result<EvalSet> ParseEvalSet(std::string_view jsonl);

struct EvalReport {
  std::string name, task;
  std::map<std::string, double> metrics;
  std::map<std::string, double> thresholds;
  bool passed = false;
  std::string failed;  // the measures under their threshold, or why it could not run
  size_t examples = 0;
  double seconds = 0;
  int64_t unix_ms = 0;
  uint32_t version = 0;  // the version evaluated

  std::string ToJson() const;
};

// One request through the serving path: (HTTP status, body).
struct ServedAnswer {
  int status = 0;
  std::string body;
};
using ServeFn =
    std::function<Result<ServedAnswer>(const std::string& path, const std::string& json_body)>;

// Runs `set` against `model` ("id@N"). Requests a gateway cannot take yet —
// 404 while the catalog change reaches it, 429/503/504 while a worker loads
// the version — are sent again for up to a minute; any other failure ends
// the run with a report that did not pass.
EvalReport RunEvaluation(const EvalSet& set, const std::string& model, const ServeFn& serve);

}  // namespace shoal::admin
