// Extract on the native runtime against what transformers' pipelines
// answer: tests/reference/extraction_reference.py runs the model in float64
// (bert_reference.py) on the ids Shoal's tokenizer gave and applies the
// pipelines' rules (subwords, aggregation strategies, label grouping,
// softmax or sigmoid) itself. The seeded token classifiers cover WordPiece
// with BIO labels, byte-level BPE with IOBES labels (F16 weights) and XLM-R's
// SentencePiece, whose normalizer rewrites characters (BF16); the text
// classifiers single-label softmax and multi-label sigmoid (BF16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "catalog/model_spec.h"
#include "runtime/native/native_runtime.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

// Names, places, subwords, punctuation, accents, CJK, an emoji, runs of
// spaces, words the tiny vocabularies do not have, and characters NFKC
// rewrites.
const std::vector<std::string> kTexts = {
    "Ada Lovelace worked with Charles Babbage in London.",
    "The Zephyrine consortium opened offices in São Paulo and Zürich last spring.",
    "  leading spaces,  double  spaces and trailing ones  ",
    "New York-based analysts (e.g. at Goldman) expect 3.5% growth; others don't.",
    "東京 and 北京 are capitals 🙂 of their countries",
    "unbelievably reorganizational antidisestablishmentarianism",
    "x",
    "\xEF\xAC\x81ne caf\xC3\xA9 in \xEF\xBC\xB4\xEF\xBD\x8F\xEF\xBD\x8B\xEF\xBD\x99\xEF\xBD\x8F",  // a ligature, full-width letters
};

struct ModelUnderTest {
  std::unique_ptr<Model> model;
  std::string dir;
};

ModelUnderTest LoadExtractor(NativeRuntime& runtime, const std::string& name) {
  ModelUnderTest m;
  m.dir = std::string(SHOAL_TEST_MODELS) + "/" + name;
  auto spec = ModelSpec::Parse("id: t/" + name + "\nruntime: native\ntask: extract\npath: " + m.dir + "\n");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto model = runtime.Load(*ModelConfig::FromSpec(*spec), LoadContext{2});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (model.ok()) m.model = std::move(model).value();
  return m;
}

// The reference's answer for each text (tokens from Shoal's tokenizer).
nlohmann::json Reference(Model& model, const std::string& dir, const nlohmann::json& options) {
  nlohmann::json request = options;
  for (const std::string& text : kTexts) {
    TokenizeInput in{text, true};
    TokenizeOutput out;
    EXPECT_TRUE(model.Tokenize({&in, 1}, {&out, 1}).ok());
    nlohmann::json item = {{"text", text}};
    for (const Token& t : out.tokens) {
      item["ids"].push_back(t.id);
      item["offsets"].push_back({t.start, t.stop});
      item["special"].push_back(t.special ? 1 : 0);
    }
    request["inputs"].push_back(item);
  }
  const fs::path tmp = fs::temp_directory_path() / ("shoal-extract-ref-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "in.json") << request.dump();
  const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_EXTRACTION_REFERENCE + " " + dir + " " +
                          (tmp / "in.json").string() + " " + (tmp / "out.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  nlohmann::json out;
  if (std::ifstream f(tmp / "out.json"); f) out = nlohmann::json::parse(f).at("outputs");
  fs::remove_all(tmp);
  return out;
}

std::vector<ExtractOutput> RunExtract(Model& model, std::optional<Aggregation> aggregation, uint32_t top_k) {
  std::vector<ExtractInput> in;
  for (const std::string& text : kTexts) {
    in.push_back({.text = text, .truncate = false, .lora = {}, .aggregation = aggregation, .top_k = top_k});
  }
  std::vector<ExtractOutput> out(in.size());
  EXPECT_TRUE(model.Extract(in, out).ok());
  return out;
}

class TokenClassifierReference
    : public ::testing::TestWithParam<std::tuple<const char*, Aggregation>> {};

TEST_P(TokenClassifierReference, EntitiesMatchThePipeline) {
  const auto [name, aggregation] = GetParam();
  NativeRuntime runtime;
  ModelUnderTest m = LoadExtractor(runtime, name);
  ASSERT_NE(m.model, nullptr);
  const nlohmann::json want = Reference(*m.model, m.dir, {{"aggregation", AggregationName(aggregation)}});
  ASSERT_EQ(want.size(), kTexts.size());
  const std::vector<ExtractOutput> got = RunExtract(*m.model, aggregation, 0);
  size_t compared = 0, entities = 0;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    ASSERT_TRUE(got[i].status.ok()) << got[i].status.ToString();
    EXPECT_TRUE(got[i].labels.empty());
    // A token whose two best labels are this close could go either way in
    // float32: such a text is a tie, not a mismatch.
    if (want[i].at("margin").get<double>() < 1e-3) continue;
    ++compared;
    const auto& w = want[i].at("entities");
    ASSERT_EQ(got[i].entities.size(), w.size()) << kTexts[i] << "\nreference: " << w.dump();
    for (size_t k = 0; k < w.size(); ++k) {
      const Entity& e = got[i].entities[k];
      EXPECT_EQ(e.label, w[k].at("label").get<std::string>()) << kTexts[i] << " entity " << k;
      EXPECT_EQ(e.start, w[k].at("start").get<uint32_t>()) << kTexts[i] << " entity " << k;
      EXPECT_EQ(e.end, w[k].at("end").get<uint32_t>()) << kTexts[i] << " entity " << k;
      EXPECT_EQ(e.text, w[k].at("text").get<std::string>()) << kTexts[i] << " entity " << k;
      EXPECT_NEAR(e.score, w[k].at("score").get<double>(), 1e-4) << kTexts[i] << " entity " << k;
    }
    entities += w.size();
  }
  std::printf("%s, aggregation %s: %zu of %zu texts compared (the rest ties), %zu entities equal\n", name,
              std::string(AggregationName(aggregation)).c_str(), compared, kTexts.size(), entities);
  EXPECT_GE(compared, kTexts.size() - 2) << "too many ties to say anything";
  EXPECT_GT(entities, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Models, TokenClassifierReference,
    ::testing::Combine(::testing::Values("bert-ner-tiny", "roberta-ner-tiny", "xlmr-ner-tiny", "modernbert-ner-tiny",
                                         "deberta-v3-ner-tiny", "distilbert-ner-tiny", "mpnet-ner-tiny",
                                         "electra-ner-tiny"),
                       ::testing::Values(Aggregation::kNone, Aggregation::kSimple, Aggregation::kFirst,
                                         Aggregation::kAverage, Aggregation::kMax)),
    [](const auto& info) {
      std::string n = std::string(std::get<0>(info.param)) + "_" +
                      std::string(AggregationName(std::get<1>(info.param)));
      for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return n;
    });

TEST(TextClassifierReference, LabelsMatchThePipeline) {
  NativeRuntime runtime;
  for (const char* name : {"roberta-classifier-tiny", "bert-multilabel-tiny"}) {
    ModelUnderTest m = LoadExtractor(runtime, name);
    ASSERT_NE(m.model, nullptr);
    for (uint32_t top_k : {0u, 2u}) {
      const nlohmann::json want = Reference(*m.model, m.dir, {{"top_k", top_k}});
      ASSERT_EQ(want.size(), kTexts.size());
      const std::vector<ExtractOutput> got = RunExtract(*m.model, std::nullopt, top_k);
      for (size_t i = 0; i < kTexts.size(); ++i) {
        ASSERT_TRUE(got[i].status.ok()) << got[i].status.ToString();
        const auto& w = want[i].at("labels");
        ASSERT_EQ(got[i].labels.size(), w.size()) << name;
        for (size_t k = 0; k < w.size(); ++k) {
          EXPECT_EQ(got[i].labels[k].label, w[k].at("label").get<std::string>()) << name << ": " << kTexts[i];
          EXPECT_NEAR(got[i].labels[k].score, w[k].at("score").get<double>(), 1e-4) << name << ": " << kTexts[i];
        }
      }
    }
  }
}

// What an extractor refuses, and what it says when registered wrongly.
TEST(NativeExtract, RefusesOptionsOfTheOtherKindAndWrongTasks) {
  NativeRuntime runtime;
  ModelUnderTest ner = LoadExtractor(runtime, "bert-ner-tiny");
  ModelUnderTest classifier = LoadExtractor(runtime, "roberta-classifier-tiny");
  ASSERT_NE(ner.model, nullptr);
  ASSERT_NE(classifier.model, nullptr);
  ExtractInput top_k{.text = "Ada", .truncate = false, .lora = {}, .aggregation = {}, .top_k = 2};
  ExtractOutput out;
  ASSERT_TRUE(ner.model->Extract({&top_k, 1}, {&out, 1}).ok());
  EXPECT_EQ(out.status.code(), Code::kInvalidInput);
  EXPECT_NE(out.status.message().find("top_k"), std::string::npos) << out.status.ToString();
  ExtractInput aggregation{.text = "Ada", .truncate = false, .lora = {}, .aggregation = Aggregation::kFirst,
                           .top_k = 0};
  out = {};
  ASSERT_TRUE(classifier.model->Extract({&aggregation, 1}, {&out, 1}).ok());
  EXPECT_EQ(out.status.code(), Code::kInvalidInput);
  EXPECT_NE(out.status.message().find("aggregation"), std::string::npos) << out.status.ToString();

  // Truncation: the entities of the kept part, and the item says it was cut.
  std::string long_text;
  for (int i = 0; i < 200; ++i) long_text += "Ada Lovelace ";
  ExtractInput cut{.text = long_text, .truncate = true, .lora = {}, .aggregation = {}, .top_k = 0};
  ExtractInput uncut{.text = long_text, .truncate = false, .lora = {}, .aggregation = {}, .top_k = 0};
  std::vector<ExtractInput> in = {cut, uncut};
  std::vector<ExtractOutput> outs(2);
  ASSERT_TRUE(ner.model->Extract(in, outs).ok());
  ASSERT_TRUE(outs[0].status.ok()) << outs[0].status.ToString();
  EXPECT_TRUE(outs[0].truncated);
  EXPECT_EQ(outs[0].tokens, 128u);
  for (const Entity& e : outs[0].entities) EXPECT_LE(e.end, long_text.size());
  EXPECT_EQ(outs[1].status.code(), Code::kInvalidInput) << "too long without truncate";

  for (const auto& [name, task, says] : {std::tuple{"bert-ner-tiny", "encode", "task: extract"},
                                         std::tuple{"bert-tiny-mean", "extract", "needs a classifier"}}) {
    auto spec = ModelSpec::Parse(std::string("id: t/x\nruntime: native\ntask: ") + task + "\npath: " +
                                 SHOAL_TEST_MODELS + "/" + name + "\n");
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    auto refused = runtime.Load(*ModelConfig::FromSpec(*spec), LoadContext{1});
    ASSERT_FALSE(refused.ok()) << name;
    EXPECT_NE(refused.status().message().find(says), std::string::npos) << refused.status().ToString();
  }
}

}  // namespace
}  // namespace shoal::native
