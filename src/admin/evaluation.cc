#include "admin/evaluation.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "admin/eval_metrics.h"
#include "catalog/names.h"
#include "common/clock.h"
#include "common/cosine.h"
#include "common/log.h"

namespace shoal::admin {
namespace {

using nlohmann::json;

constexpr size_t kChunk = 32;  // inputs per request
constexpr size_t kTopK = 10;

const std::map<std::string, std::vector<std::string>>& Measures() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"retrieval", {"ndcg@10", "recall@10", "mrr@10"}},
      {"similarity", {"spearman"}},
      {"reranking", {"mrr@10", "ndcg@10"}},
      {"classification", {"accuracy", "macro_f1"}},
      {"ner", {"f1", "precision", "recall"}},
      {"generation", {"exact_match", "json_valid", "rouge_l"}},
  };
  return m;
}

Status LineError(size_t line, const std::string& what) {
  return InvalidInput("evaluation line " + std::to_string(line) + ": " + what);
}

// The fields of `o` must be among `allowed`.
Status OnlyFields(const json& o, std::initializer_list<std::string_view> allowed, size_t line) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      return LineError(line, "unknown field '" + it.key() + "'");
    }
  }
  return Status::Ok();
}

Result<std::string> Text(const json& o, const char* key, size_t line) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string() || it->get<std::string>().empty()) {
    return LineError(line, std::string("'") + key + "' must be a non-empty string");
  }
  return it->get<std::string>();
}

Status ParseHeader(const json& o, EvalSet* set) {
  SHOAL_RETURN_IF_ERROR(
      OnlyFields(o, {"evaluation", "task", "thresholds", "source", "max_tokens"}, 1));
  SHOAL_ASSIGN_OR_RETURN(set->name, Text(o, "evaluation", 1));
  SHOAL_ASSIGN_OR_RETURN(set->task, Text(o, "task", 1));
  auto measures = Measures().find(set->task);
  if (measures == Measures().end()) {
    return LineError(
        1, "task '" + set->task +
               "' is not one of retrieval, similarity, reranking, classification, ner, generation");
  }
  if (auto s = o.find("source"); s != o.end()) {
    if (!s->is_string()) return LineError(1, "'source' must be a string");
    set->source = s->get<std::string>();
  }
  if (auto m = o.find("max_tokens"); m != o.end()) {
    if (!m->is_number_unsigned() || m->get<uint64_t>() == 0 || m->get<uint64_t>() > 4096) {
      return LineError(1, "'max_tokens' must be 1 to 4096");
    }
    set->max_tokens = m->get<uint32_t>();
  }
  if (auto t = o.find("thresholds"); t != o.end()) {
    if (!t->is_object()) return LineError(1, "'thresholds' must be an object of measure: minimum");
    for (auto it = t->begin(); it != t->end(); ++it) {
      const auto& names = measures->second;
      if (std::find(names.begin(), names.end(), it.key()) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        return LineError(1, "'" + it.key() + "' is no measure of " + set->task + " (" + list + ")");
      }
      if (!it->is_number()) return LineError(1, "threshold '" + it.key() + "' must be a number");
      set->thresholds[it.key()] = it->get<double>();
    }
  }
  return Status::Ok();
}

Status ParseLine(const json& o, size_t line, EvalSet* set) {
  const std::string& task = set->task;
  if (task == "retrieval" && o.contains("doc")) {
    SHOAL_RETURN_IF_ERROR(OnlyFields(o, {"doc", "text"}, line));
    SHOAL_ASSIGN_OR_RETURN(std::string id, Text(o, "doc", line));
    SHOAL_ASSIGN_OR_RETURN(std::string text, Text(o, "text", line));
    set->docs.push_back({std::move(id), std::move(text)});
  } else if (task == "retrieval") {
    SHOAL_RETURN_IF_ERROR(OnlyFields(o, {"query", "relevant"}, line));
    EvalSet::Query q;
    SHOAL_ASSIGN_OR_RETURN(q.text, Text(o, "query", line));
    const json& rel = o.contains("relevant") ? o["relevant"] : json();
    if (!rel.is_array() || rel.empty())
      return LineError(line, "'relevant' must list the ids of relevant docs");
    for (const json& id : rel) {
      if (!id.is_string()) return LineError(line, "'relevant' must list doc ids (strings)");
      q.relevant.push_back(id.get<std::string>());
    }
    set->queries.push_back(std::move(q));
  } else if (task == "similarity") {
    SHOAL_RETURN_IF_ERROR(OnlyFields(o, {"a", "b", "score"}, line));
    EvalSet::Pair p;
    SHOAL_ASSIGN_OR_RETURN(p.a, Text(o, "a", line));
    SHOAL_ASSIGN_OR_RETURN(p.b, Text(o, "b", line));
    if (!o.contains("score") || !o["score"].is_number())
      return LineError(line, "'score' must be a number");
    p.score = o["score"].get<double>();
    set->pairs.push_back(std::move(p));
  } else if (task == "reranking") {
    SHOAL_RETURN_IF_ERROR(OnlyFields(o, {"query", "documents", "relevant"}, line));
    EvalSet::Rerank r;
    SHOAL_ASSIGN_OR_RETURN(r.query, Text(o, "query", line));
    if (!o.contains("documents") || !o["documents"].is_array() || o["documents"].empty()) {
      return LineError(line, "'documents' must be a list of texts");
    }
    for (const json& d : o["documents"]) {
      if (!d.is_string()) return LineError(line, "'documents' must be a list of texts");
      r.documents.push_back(d.get<std::string>());
    }
    if (!o.contains("relevant") || !o["relevant"].is_array() || o["relevant"].empty()) {
      return LineError(line, "'relevant' must list the indices of relevant documents");
    }
    for (const json& i : o["relevant"]) {
      if (!i.is_number_unsigned() || i.get<size_t>() >= r.documents.size()) {
        return LineError(line, "'relevant' must list indices into 'documents'");
      }
      r.relevant.push_back(i.get<size_t>());
    }
    set->reranks.push_back(std::move(r));
  } else if (task == "classification") {
    SHOAL_RETURN_IF_ERROR(OnlyFields(o, {"text", "label"}, line));
    EvalSet::Example e;
    SHOAL_ASSIGN_OR_RETURN(e.text, Text(o, "text", line));
    SHOAL_ASSIGN_OR_RETURN(e.label, Text(o, "label", line));
    set->examples.push_back(std::move(e));
  } else if (task == "ner") {
    SHOAL_RETURN_IF_ERROR(OnlyFields(o, {"text", "entities"}, line));
    EvalSet::Example e;
    SHOAL_ASSIGN_OR_RETURN(e.text, Text(o, "text", line));
    if (!o.contains("entities") || !o["entities"].is_array())
      return LineError(line, "'entities' must be a list");
    for (const json& s : o["entities"]) {
      if (!s.is_object() || !s.contains("start") || !s.contains("end") ||
          !s["start"].is_number_unsigned() || !s["end"].is_number_unsigned() ||
          s["end"].get<uint32_t>() <= s["start"].get<uint32_t>()) {
        return LineError(line, "each entity is {\"start\", \"end\", \"label\"} with start < end");
      }
      SHOAL_ASSIGN_OR_RETURN(std::string label, Text(s, "label", line));
      e.entities.push_back(
          {s["start"].get<uint32_t>(), s["end"].get<uint32_t>(), std::move(label)});
    }
    set->examples.push_back(std::move(e));
  } else {  // generation
    SHOAL_RETURN_IF_ERROR(OnlyFields(o, {"prompt", "reference"}, line));
    EvalSet::Example e;
    SHOAL_ASSIGN_OR_RETURN(e.text, Text(o, "prompt", line));
    if (auto r = o.find("reference"); r != o.end()) {
      if (!r->is_string()) return LineError(line, "'reference' must be a string");
      e.reference = r->get<std::string>();
    }
    set->examples.push_back(std::move(e));
  }
  return Status::Ok();
}

// Sends with the retries RunEvaluation promises; the answer's JSON.
Result<json> Serve(const ServeFn& serve, const std::string& path, const json& body) {
  const auto give_up = SteadyClock::now() + std::chrono::seconds(60);
  auto backoff = std::chrono::milliseconds(50);
  for (;;) {
    auto answer = serve(path, body.dump());
    if (!answer.ok()) return answer.status();
    const int s = answer->status;
    if (s == 200) {
      json out = json::parse(answer->body, nullptr, /*allow_exceptions=*/false);
      if (out.is_discarded()) return Internal(path + " answered no JSON");
      return out;
    }
    const bool later = s == 404 || s == 429 || s == 503 || s == 504;
    if (!later || SteadyClock::now() + backoff > give_up) {
      return Status(Code::kInferenceError,
                    path + " answered " + std::to_string(s) + ": " + answer->body.substr(0, 300));
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

Result<std::vector<std::vector<float>>> Embed(const ServeFn& serve, const std::string& model,
                                              const std::vector<std::string>& texts) {
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < texts.size(); i += kChunk) {
    const std::vector<std::string> chunk(
        texts.begin() + static_cast<std::ptrdiff_t>(i),
        texts.begin() + static_cast<std::ptrdiff_t>(std::min(texts.size(), i + kChunk)));
    SHOAL_ASSIGN_OR_RETURN(json answer,
                           Serve(serve, "/v1/embeddings", {{"model", model}, {"input", chunk}}));
    for (const json& d : answer["data"]) out.push_back(d["embedding"].get<std::vector<float>>());
  }
  if (out.size() != texts.size()) return Internal("/v1/embeddings answered a vector per input? no");
  return out;
}

// The extract route's items for `texts`.
Result<std::vector<json>> Extract(const ServeFn& serve, const std::string& model,
                                  const std::vector<std::string>& texts, bool entities) {
  std::vector<json> out;
  for (size_t i = 0; i < texts.size(); i += kChunk) {
    json items = json::array();
    for (size_t j = i; j < std::min(texts.size(), i + kChunk); ++j)
      items.push_back({{"text", texts[j]}});
    json body = {{"items", items}, {"truncate", true}};
    if (entities) body["aggregation"] = "simple";
    SHOAL_ASSIGN_OR_RETURN(json answer, Serve(serve, "/v1/extract/" + model, body));
    for (json& item : answer["items"]) out.push_back(std::move(item));
  }
  return out;
}

Status Retrieval(const EvalSet& set, const std::string& model, const ServeFn& serve,
                 std::map<std::string, double>* m) {
  std::vector<std::string> doc_texts, query_texts;
  for (const auto& d : set.docs) doc_texts.push_back(d.text);
  for (const auto& q : set.queries) query_texts.push_back(q.text);
  SHOAL_ASSIGN_OR_RETURN(auto docs, Embed(serve, model, doc_texts));
  SHOAL_ASSIGN_OR_RETURN(auto queries, Embed(serve, model, query_texts));
  double ndcg = 0, recall = 0, mrr = 0;
  for (size_t q = 0; q < queries.size(); ++q) {
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t d = 0; d < docs.size(); ++d) ranked.push_back({-Cosine(queries[q], docs[d]), d});
    std::sort(ranked.begin(), ranked.end());
    const auto& want = set.queries[q].relevant;
    std::vector<bool> hits;
    for (const auto& [score, d] : ranked) {
      hits.push_back(std::find(want.begin(), want.end(), set.docs[d].id) != want.end());
    }
    ndcg += NdcgAtK(hits, want.size(), kTopK);
    recall += RecallAtK(hits, want.size(), kTopK);
    mrr += ReciprocalRankAtK(hits, kTopK);
  }
  const double n = static_cast<double>(std::max<size_t>(1, queries.size()));
  (*m)["ndcg@10"] = ndcg / n;
  (*m)["recall@10"] = recall / n;
  (*m)["mrr@10"] = mrr / n;
  return Status::Ok();
}

Status Similarity(const EvalSet& set, const std::string& model, const ServeFn& serve,
                  std::map<std::string, double>* m) {
  std::vector<std::string> texts;
  for (const auto& p : set.pairs) {
    texts.push_back(p.a);
    texts.push_back(p.b);
  }
  SHOAL_ASSIGN_OR_RETURN(auto vectors, Embed(serve, model, texts));
  std::vector<double> predicted, gold;
  for (size_t i = 0; i < set.pairs.size(); ++i) {
    predicted.push_back(Cosine(vectors[2 * i], vectors[2 * i + 1]));
    gold.push_back(set.pairs[i].score);
  }
  (*m)["spearman"] = Spearman(predicted, gold);
  return Status::Ok();
}

Status Reranking(const EvalSet& set, const std::string& model, const ServeFn& serve,
                 std::map<std::string, double>* m) {
  double mrr = 0, ndcg = 0;
  for (const auto& r : set.reranks) {
    SHOAL_ASSIGN_OR_RETURN(
        json answer, Serve(serve, "/v1/rerank",
                           {{"model", model}, {"query", r.query}, {"documents", r.documents}}));
    std::vector<bool> hits;
    for (const json& result : answer["results"]) {
      const size_t index = result["index"].get<size_t>();
      hits.push_back(std::find(r.relevant.begin(), r.relevant.end(), index) != r.relevant.end());
    }
    mrr += ReciprocalRankAtK(hits, kTopK);
    ndcg += NdcgAtK(hits, r.relevant.size(), kTopK);
  }
  const double n = static_cast<double>(std::max<size_t>(1, set.reranks.size()));
  (*m)["mrr@10"] = mrr / n;
  (*m)["ndcg@10"] = ndcg / n;
  return Status::Ok();
}

Status Classification(const EvalSet& set, const std::string& model, const ServeFn& serve,
                      std::map<std::string, double>* m) {
  std::vector<std::string> texts, gold, predicted;
  for (const auto& e : set.examples) {
    texts.push_back(e.text);
    gold.push_back(e.label);
  }
  SHOAL_ASSIGN_OR_RETURN(auto items, Extract(serve, model, texts, /*entities=*/false));
  size_t right = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const json& labels = items[i]["labels"];
    predicted.push_back(labels.empty() ? "" : labels[0]["label"].get<std::string>());
    right += predicted.back() == gold[i];
  }
  (*m)["accuracy"] =
      static_cast<double>(right) / static_cast<double>(std::max<size_t>(1, gold.size()));
  (*m)["macro_f1"] = MacroF1(gold, predicted);
  return Status::Ok();
}

Status Ner(const EvalSet& set, const std::string& model, const ServeFn& serve,
           std::map<std::string, double>* m) {
  std::vector<std::string> texts;
  for (const auto& e : set.examples) texts.push_back(e.text);
  SHOAL_ASSIGN_OR_RETURN(auto items, Extract(serve, model, texts, /*entities=*/true));
  size_t tp = 0, predicted = 0, gold = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    std::set<std::tuple<uint32_t, uint32_t, std::string>> want;
    for (const auto& s : set.examples[i].entities) want.insert({s.start, s.end, s.label});
    gold += want.size();
    for (const json& e : items[i]["entities"]) {
      ++predicted;
      tp += want.count(
          {e["start"].get<uint32_t>(), e["end"].get<uint32_t>(), e["label"].get<std::string>()});
    }
  }
  const PrecisionRecall pr = FromCounts(tp, predicted, gold);
  (*m)["f1"] = pr.f1;
  (*m)["precision"] = pr.precision;
  (*m)["recall"] = pr.recall;
  return Status::Ok();
}

std::string Trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

Status Generation(const EvalSet& set, const std::string& model, const ServeFn& serve,
                  std::map<std::string, double>* m) {
  double exact = 0, valid = 0, rouge = 0;
  for (const auto& e : set.examples) {
    json body = {{"model", model},
                 {"messages", json::array({{{"role", "user"}, {"content", e.text}}})},
                 {"temperature", 0},
                 {"max_tokens", set.max_tokens}};
    SHOAL_ASSIGN_OR_RETURN(json answer, Serve(serve, "/v1/chat/completions", body));
    const std::string text = Trimmed(answer["choices"][0]["message"]["content"].get<std::string>());
    exact += text == Trimmed(e.reference);
    valid += !json::parse(text, nullptr, false).is_discarded();
    rouge += RougeL(text, e.reference);
  }
  const double n = static_cast<double>(std::max<size_t>(1, set.examples.size()));
  (*m)["exact_match"] = exact / n;
  (*m)["json_valid"] = valid / n;
  (*m)["rouge_l"] = rouge / n;
  return Status::Ok();
}

}  // namespace

Result<EvalSet> ParseEvalSet(std::string_view jsonl) {
  EvalSet set;
  set.text = std::string(jsonl);
  size_t line_no = 0;
  size_t start = 0;
  while (start < jsonl.size()) {
    size_t end = jsonl.find('\n', start);
    if (end == std::string_view::npos) end = jsonl.size();
    const std::string_view line = jsonl.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const json o = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!o.is_object()) return LineError(line_no, "not a JSON object");
    if (line_no == 1) {
      SHOAL_RETURN_IF_ERROR(ParseHeader(o, &set));
      continue;
    }
    SHOAL_RETURN_IF_ERROR(ParseLine(o, line_no, &set));
  }
  if (set.name.empty())
    return InvalidInput("evaluation: the first line is the header {\"evaluation\", \"task\", ...}");
  if (set.size() == 0) return InvalidInput("evaluation '" + set.name + "' has no examples");
  std::set<std::string> ids;
  for (const auto& d : set.docs) {
    if (!ids.insert(d.id).second)
      return InvalidInput("evaluation '" + set.name + "': doc '" + d.id + "' twice");
  }
  for (const auto& q : set.queries) {
    for (const auto& id : q.relevant) {
      if (!ids.count(id)) return InvalidInput("evaluation '" + set.name + "': no doc '" + id + "'");
    }
  }
  return set;
}

std::string EvalReport::ToJson() const {
  return json{
      {"evaluation", name},       {"task", task},      {"version", version}, {"metrics", metrics},
      {"thresholds", thresholds}, {"passed", passed},  {"failed", failed},   {"examples", examples},
      {"seconds", seconds},       {"unix_ms", unix_ms}}
      .dump();
}

EvalReport RunEvaluation(const EvalSet& set, const std::string& model, const ServeFn& serve) {
  EvalReport report;
  report.name = set.name;
  report.task = set.task;
  report.thresholds = set.thresholds;
  report.examples = set.size();
  if (auto ref = SplitVersionRef(model); ref.ok()) report.version = ref->version;
  const auto start = SteadyClock::now();
  spdlog::info("evaluation {}: {} examples of {} against {}", set.name, set.size(), set.task,
               model);
  Status s;
  if (set.task == "retrieval")
    s = Retrieval(set, model, serve, &report.metrics);
  else if (set.task == "similarity")
    s = Similarity(set, model, serve, &report.metrics);
  else if (set.task == "reranking")
    s = Reranking(set, model, serve, &report.metrics);
  else if (set.task == "classification")
    s = Classification(set, model, serve, &report.metrics);
  else if (set.task == "ner")
    s = Ner(set, model, serve, &report.metrics);
  else
    s = Generation(set, model, serve, &report.metrics);
  report.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  report.unix_ms = UnixMillis();
  if (!s.ok()) {
    report.failed = s.message();
  } else {
    for (const auto& [measure, minimum] : set.thresholds) {
      const double got = report.metrics[measure];
      if (got < minimum) {
        report.failed += (report.failed.empty() ? "" : ", ") + measure + " " + std::to_string(got) +
                         " < " + std::to_string(minimum);
      }
    }
  }
  report.passed = report.failed.empty();
  spdlog::info("evaluation {} of {}: {} in {:.1f} s{}", set.name, model,
               report.passed ? "passed" : "failed", report.seconds,
               report.failed.empty() ? "" : " (" + report.failed + ")");
  return report;
}

}  // namespace shoal::admin
