// Versions of a model (catalog/model_version.h): names, the head's moves,
// records as stored, and the license a model's files state
// (admin/provenance.h).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "admin/eval_metrics.h"
#include "admin/evaluation.h"
#include "admin/golden_agreement.h"
#include "admin/provenance.h"
#include "catalog/model_version.h"
#include "catalog/names.h"
#include "common/base64.h"
#include "queue/catalog_watch.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;

TEST(VersionRef, SplitsAtTheAtAndRefusesWhatIsNoVersion) {
  auto plain = SplitVersionRef("org/emb-v1.5");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->id, "org/emb-v1.5");
  EXPECT_EQ(plain->version, 0u);
  auto pinned = SplitVersionRef("org/emb-v1.5@12");
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->id, "org/emb-v1.5");
  EXPECT_EQ(pinned->version, 12u);
  for (const char* bad : {"m@", "m@0", "m@x", "m@1x", "m@-1", "m@99999999999"}) {
    EXPECT_EQ(SplitVersionRef(bad).status().code(), Code::kInvalidInput) << bad;
  }
  EXPECT_EQ(VersionedName("m", 3), "m@3");
  EXPECT_TRUE(ValidateServedName("org/emb@3").ok());
  EXPECT_FALSE(ValidateServedName("org/e mb@3").ok());
  EXPECT_FALSE(ValidateModelId("org/emb@3").ok()) << "an id itself holds no '@'";
  // In the KV bucket, '@' (no key character) becomes '=' (no id character).
  EXPECT_EQ(queue::CatalogKey("org/emb@3"), "org/emb=3");
  EXPECT_EQ(queue::NameOfCatalogKey("org/emb=3"), "org/emb@3");
  EXPECT_EQ(queue::CatalogKey("org/emb"), "org/emb");
}

TEST(VersionHead, PromotionsKeepTheRollbackTargetAndCandidates) {
  VersionHead h;
  h.AddCandidate(1);
  h.Promote(1);
  EXPECT_EQ(h.serving, 1u);
  EXPECT_TRUE(h.Pinnable().empty());
  EXPECT_FALSE(h.Rollback()) << "nothing served before";

  h.AddCandidate(2);
  EXPECT_EQ(h.StateOf(2), VersionState::kCandidate);
  h.Promote(2);
  EXPECT_EQ(h.serving, 2u);
  EXPECT_EQ(h.StateOf(1), VersionState::kRollbackTarget);
  EXPECT_EQ(h.Pinnable(), std::vector<uint32_t>{1});

  ASSERT_TRUE(h.Rollback());
  EXPECT_EQ(h.serving, 1u);
  EXPECT_EQ(h.StateOf(2), VersionState::kCandidate)
      << "rolled back from: kept, to be looked at or promoted again";
  EXPECT_TRUE(h.rollback.empty());

  for (uint32_t v = 3; v <= 8; ++v) h.AddCandidate(v);
  EXPECT_EQ(h.candidates.size(), VersionHead::kMaxCandidates);
  EXPECT_EQ(h.StateOf(2), VersionState::kRetired) << "the oldest candidates retire";
  EXPECT_EQ(h.last, 8u);
  h.Promote(2);  // a retired version may serve again
  EXPECT_EQ(h.serving, 2u);
  EXPECT_EQ(h.StateOf(1), VersionState::kRollbackTarget);
  h.Promote(5);
  EXPECT_EQ(h.StateOf(2), VersionState::kRollbackTarget);
  EXPECT_EQ(h.StateOf(1), VersionState::kRetired)
      << "only the newest rollback target is kept loadable";
  EXPECT_EQ(h.Pinnable(), (std::vector<uint32_t>{2, 6, 7, 8}));

  h.Log(1000, "promoted", 5, "key:ops");
  auto back = VersionHead::Parse(h.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), h.ToJson());
  EXPECT_EQ(back->log.back().by, "key:ops");
}

TEST(ModelVersion, ARecordReadsBackAsWritten) {
  ModelVersion v;
  v.version = 4;
  auto spec = ModelSpec::Parse("id: team/emb\nruntime: identity\nversion: 4\nidentity: {dim: 8}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  v.spec = *spec;
  v.record = {
      .source = "path:/models/emb",
      .files_digest = "sha256:" + std::string(64, 'a'),
      .files = {{"config.json", 612, std::string(64, 'b')}},
      .license = "apache-2.0",
      .license_source = "README.md",
      .owner = "key:ops",
      .registered_unix_ms = 1765000000000,
      .memory_bytes = 1 << 20,
      .capacity = {.per_second = 812.5, .unit = "items", .batch = 32, .hardware_class = "cpu-x"},
      .golden_json =
          R"({"outputs":[{"dense":"AACAPw=="}],"probe_set":"shoal-probes-v1","task":"encode"})"};
  auto back = ModelVersion::Parse(v.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), v.ToJson());
  EXPECT_EQ(back->record.files[0].bytes, 612u);
  EXPECT_EQ(back->record.capacity.per_second, 812.5);

  auto mismatched = ModelSpec::Parse("id: team/emb@3\nruntime: identity\nversion: 4\n");
  EXPECT_EQ(mismatched.status().code(), Code::kInvalidInput) << "'@3' is version 3";
}

class License : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal-license-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(License, ReadFromTheModelCardThenALicenseFile) {
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "");
  Write("LICENSE",
        "MIT License\n\nCopyright (c) 2024\n\nPermission is hereby granted, free of charge, ...");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "mit");
  EXPECT_EQ(admin::FindLicense(dir_.string()).source, "LICENSE");
  Write("README.md",
        "---\nlanguage: en\nlicense: other\nlicense_name: acme-research\n---\n# Model\n");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "acme-research")
      << "the card wins, its name for 'other'";
  Write("README.md", "---\nlicense: \"apache-2.0\"\n---\n");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "apache-2.0");
  Write("README.md", "# No front matter\nlicense: mit\n");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "mit")
      << "only front matter counts; then the LICENSE file";
  Write("LICENSE", "Redistribution and use in source and binary forms ... Neither the name of ...");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "bsd-3-clause");
  Write("LICENSE", "Some terms of our own.");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "other");
}

TEST_F(License, TheRegistrantMayStateOneTheFilesDoNotContradict) {
  auto stated = admin::SettleLicense(dir_.string(), "cc-by-4.0", /*required=*/true);
  ASSERT_TRUE(stated.ok());
  EXPECT_EQ(stated->source, "registrant");
  EXPECT_EQ(admin::SettleLicense(dir_.string(), "", /*required=*/true).status().code(),
            Code::kInvalidInput);
  EXPECT_TRUE(admin::SettleLicense(dir_.string(), "", /*required=*/false).ok());
  Write("README.md", "---\nlicense: apache-2.0\n---\n");
  EXPECT_TRUE(admin::SettleLicense(dir_.string(), "Apache-2.0", true).ok())
      << "ids compare without case";
  EXPECT_EQ(admin::SettleLicense(dir_.string(), "mit", false).status().code(), Code::kInvalidInput);
}

// Golden outputs compared (admin/golden_agreement.h), on outputs written
// here as probes.cc writes them.
std::string Vectors(const std::vector<std::vector<float>>& vs) {
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& v : vs) {
    std::string b64;
    AppendBase64({reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)}, &b64);
    outputs.push_back({{"dense", b64}});
  }
  return nlohmann::json{{"probe_set", "p"}, {"task", "encode"}, {"outputs", outputs}}.dump();
}

TEST(GoldenAgreement, CosinesAndNearestNeighbours) {
  const std::string a = Vectors({{1, 0, 0}, {0.9f, 0.1f, 0}, {0, 0, 1}});
  auto same = admin::CompareGolden(a, a);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_NEAR(same->mean_cosine, 1, 1e-12);
  EXPECT_DOUBLE_EQ(same->agreement, 1);
  // The third vector turns toward the first: its nearest probe stays the
  // first (0 and 1 keep theirs), and its cosine to itself drops to 1/sqrt 2.
  auto moved = admin::CompareGolden(a, Vectors({{1, 0, 0}, {0.9f, 0.1f, 0}, {1, 0, 1}}));
  ASSERT_TRUE(moved.ok());
  EXPECT_NEAR(moved->min_cosine, 1 / std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(moved->mean_cosine, (2 + 1 / std::sqrt(2.0)) / 3, 1e-6);
  // The second one turns toward the third: probe 0's nearest is still 1,
  // but 1's becomes 2, and 2's (0 before: a tie, the first kept) becomes 1.
  auto swapped = admin::CompareGolden(a, Vectors({{1, 0, 0}, {0.1f, 0, 0.9f}, {0, 0, 1}}));
  ASSERT_TRUE(swapped.ok());
  EXPECT_NEAR(swapped->agreement, 1.0 / 3, 1e-12);
  EXPECT_FALSE(admin::CompareGolden(a, Vectors({{1, 0}, {0, 1}, {1, 1}})).ok())
      << "other dimensions";
  const std::string other_set = R"({"probe_set": "q", "task": "encode", "outputs": []})";
  EXPECT_FALSE(admin::CompareGolden(a, other_set).ok());
}

TEST(GoldenAgreement, OrderingsLabelsAndTexts) {
  auto scores = [](std::vector<double> logits) {
    nlohmann::json outputs = nlohmann::json::array();
    for (double l : logits) outputs.push_back({{"logits", {l}}});
    return nlohmann::json{{"probe_set", "p"}, {"task", "score"}, {"outputs", outputs}}.dump();
  };
  auto g = admin::CompareGolden(scores({3, 1, 2}), scores({3.5, 0.5, 2}));
  ASSERT_TRUE(g.ok());
  EXPECT_DOUBLE_EQ(g->agreement, 1);
  EXPECT_DOUBLE_EQ(g->max_abs_diff, 0.5);
  g = admin::CompareGolden(scores({3, 1, 2}),
                           scores({3, 2.5, 2}));  // 1 and 2 swap: 2 of 3 orderings kept
  EXPECT_NEAR(g->agreement, 2.0 / 3, 1e-12);
  const std::string labels = R"({"probe_set": "p", "task": "extract", "outputs": [
      {"labels": [{"label": "pos", "score": 0.9}]}, {"labels": [{"label": "neg", "score": 0.8}]}]})";
  const std::string flipped = R"({"probe_set": "p", "task": "extract", "outputs": [
      {"labels": [{"label": "pos", "score": 0.6}]}, {"labels": [{"label": "pos", "score": 0.7}]}]})";
  EXPECT_DOUBLE_EQ(admin::CompareGolden(labels, flipped)->agreement, 0.5);
  const std::string texts =
      R"({"probe_set": "p", "task": "generate", "outputs": [{"text": " Paris"}, {"text": "x"}]})";
  EXPECT_DOUBLE_EQ(admin::CompareGolden(texts, texts)->agreement, 1);
}

// The measures, against values worked out by hand.
TEST(EvalMetrics, RankingMeasures) {
  EXPECT_DOUBLE_EQ(admin::NdcgAtK({true, false}, 1, 10), 1.0);
  EXPECT_NEAR(admin::NdcgAtK({false, true}, 1, 10), 1 / std::log2(3.0), 1e-12);
  // Two relevant at ranks 1 and 3: (1 + 1/2) / (1 + 1/log2 3).
  EXPECT_NEAR(admin::NdcgAtK({true, false, true}, 2, 10), 1.5 / (1 + 1 / std::log2(3.0)), 1e-12);
  EXPECT_DOUBLE_EQ(admin::NdcgAtK({false, true}, 1, 1), 0.0) << "past k";
  EXPECT_DOUBLE_EQ(admin::RecallAtK({true, false, true}, 4, 10), 0.5);
  EXPECT_DOUBLE_EQ(admin::ReciprocalRankAtK({false, false, true}, 10), 1.0 / 3);
  EXPECT_DOUBLE_EQ(admin::ReciprocalRankAtK({false, false, true}, 2), 0.0);
}

TEST(EvalMetrics, SpearmanF1AndRouge) {
  EXPECT_NEAR(admin::Spearman({1, 2, 3, 4}, {10, 20, 30, 45}), 1.0, 1e-12);
  EXPECT_NEAR(admin::Spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0, 1e-12);
  // Ties take their mean rank: x ranks (1, 2.5, 2.5, 4) against 1..4.
  EXPECT_NEAR(admin::Spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(4.5 * 5.0), 1e-12);
  EXPECT_DOUBLE_EQ(admin::Spearman({1, 1, 1}, {1, 2, 3}), 0.0);
  // Labels a (gold 2, predicted 1, right 1): F1 2/3; b (gold 1, predicted 2, right 1): F1 2/3.
  EXPECT_NEAR(admin::MacroF1({"a", "a", "b"}, {"a", "b", "b"}), 2.0 / 3, 1e-12);
  // LCS of "the cat sat" and "the cat sat down" is 3 words: P 1, R 3/4.
  EXPECT_NEAR(admin::RougeL("the cat sat", "the cat sat down"), 2 * 0.75 / 1.75, 1e-12);
  EXPECT_DOUBLE_EQ(admin::RougeL("", "x"), 0.0);
}

TEST(EvalSet, ParsesEachTaskAndNamesTheLineOfAMistake) {
  auto set = admin::ParseEvalSet(
      "{\"evaluation\": \"r\", \"task\": \"retrieval\", \"thresholds\": {\"ndcg@10\": 0.5}}\n"
      "{\"doc\": \"d1\", \"text\": \"one\"}\n\n{\"query\": \"q\", \"relevant\": [\"d1\"]}\n");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->docs.size(), 1u);
  EXPECT_EQ(set->queries.size(), 1u);
  EXPECT_EQ(set->thresholds.at("ndcg@10"), 0.5);
  auto fails = [](const std::string& jsonl, const std::string& says) {
    auto s = admin::ParseEvalSet(jsonl);
    EXPECT_EQ(s.status().code(), Code::kInvalidInput) << jsonl;
    EXPECT_NE(s.status().message().find(says), std::string::npos) << s.status().message();
  };
  const std::string header = "{\"evaluation\": \"s\", \"task\": \"similarity\"}\n";
  fails(header + "{\"a\": \"x\", \"b\": \"y\", \"score\": 1, \"weight\": 2}\n",
        "line 2: unknown field 'weight'");
  fails(header + "{\"a\": \"x\", \"b\": \"y\"}\n", "line 2: 'score'");
  fails(header, "no examples");
  fails("{\"evaluation\": \"s\", \"task\": \"similarity\", \"thresholds\": {\"ndcg@10\": 1}}\n",
        "no measure of similarity");
  fails("{\"evaluation\": \"s\", \"task\": \"vibes\"}\n", "task 'vibes'");
  fails(
      "{\"evaluation\": \"r\", \"task\": \"retrieval\"}\n{\"query\": \"q\", \"relevant\": "
      "[\"d9\"]}\n",
      "no doc 'd9'");
  fails(
      "{\"evaluation\": \"n\", \"task\": \"ner\"}\n{\"text\": \"Ada\", \"entities\": [{\"start\": "
      "3, \"end\": 0, \"label\": \"PER\"}]}\n",
      "start < end");
}

}  // namespace
}  // namespace shoal
