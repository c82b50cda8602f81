// The bound a quantized variant is judged by (admin/variant_gate.h): each
// check that can fail it, the evaluations compared measure by measure, and
// bounds that may be tightened but not loosened.
#include "admin/variant_gate.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shoal::admin {
namespace {

EvalReport Report(const std::string& name, std::map<std::string, double> metrics,
                  std::map<std::string, double> thresholds = {}) {
  EvalReport r;
  r.name = name;
  r.metrics = std::move(metrics);
  r.thresholds = std::move(thresholds);
  return r;
}

GoldenAgreement Close() {
  GoldenAgreement g;
  g.probes = 8;
  g.mean_cosine = 0.9991;
  g.min_cosine = 0.997;
  g.agreement = 1;
  return g;
}

TEST(VariantGate, PassesWithinEveryBound) {
  const VariantGate g =
      JudgeVariant("int8", 1, "encode", Close(), {Report("sts", {{"spearman", 0.80}})},
                   {Report("sts", {{"spearman", 0.797}})});
  EXPECT_TRUE(g.passed);
  EXPECT_TRUE(g.failures.empty());
  ASSERT_EQ(g.evaluations.size(), 1u);
  EXPECT_EQ(g.evaluations[0].measure, "spearman");
  const auto j = nlohmann::json::parse(g.ToJson("encode"));
  EXPECT_EQ(j["of"], 1);
  EXPECT_EQ(j["bounds"]["min_mean_cosine"], 0.995);
  EXPECT_EQ(j["golden"]["mean_cosine"], 0.9991);
  auto parsed = VariantGate::Parse(g.ToJson("encode"));
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->passed);
  EXPECT_EQ(parsed->precision, "int8");
}

TEST(VariantGate, EachBoundFailsItsOwnCheck) {
  GoldenAgreement g = Close();
  g.mean_cosine = 0.994;
  EXPECT_EQ(JudgeVariant("int8", 1, "encode", g, {}, {}).failures,
            std::vector<std::string>{"mean cosine 0.994000 < 0.995000"});
  g = Close();
  g.min_cosine = 0.97;
  EXPECT_EQ(JudgeVariant("int8", 1, "encode", g, {}, {}).failures,
            std::vector<std::string>{"min cosine 0.970000 < 0.980000"});
  g = Close();
  g.agreement = 0.75;
  EXPECT_EQ(JudgeVariant("int8", 1, "score", g, {}, {}).failures,
            std::vector<std::string>{"probe agreement 0.750 < 0.990"});
  // Cosines are an encoder's measure: a scorer's are not judged.
  g = Close();
  g.mean_cosine = g.min_cosine = 0;
  EXPECT_TRUE(JudgeVariant("int8", 1, "score", g, {}, {}).passed);
}

TEST(VariantGate, EvaluationsCompareTheGatedMeasuresOnBothSides) {
  // The set gates on ndcg@10: only it is compared (recall may move).
  const auto original = {
      Report("ret", {{"ndcg@10", 0.60}, {"recall@10", 0.9}}, {{"ndcg@10", 0.5}})};
  VariantGate g =
      JudgeVariant("int8", 2, "encode", Close(), original,
                   {Report("ret", {{"ndcg@10", 0.596}, {"recall@10", 0.5}}, {{"ndcg@10", 0.5}})});
  EXPECT_FALSE(g.passed);
  EXPECT_EQ(g.failures, std::vector<std::string>{"ret ndcg@10 0.5960 < 0.5970"});
  EXPECT_EQ(g.evaluations.size(), 1u);
  // A set that did not run on the variant fails it.
  g = JudgeVariant("int8", 2, "encode", Close(), original, {Report("ret", {})});
  EXPECT_EQ(g.failures, std::vector<std::string>{"evaluation ret did not run on both"});
  g = JudgeVariant("int8", 2, "encode", Close(), original, {});
  EXPECT_FALSE(g.passed);
}

TEST(VariantGate, BoundsMayOnlyBeTightened) {
  auto b = VariantBounds::Tightened(R"({"min_mean_cosine": 0.9999, "max_eval_drop": 0.001})");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->min_mean_cosine, 0.9999);
  EXPECT_EQ(b->max_eval_drop, 0.001);
  EXPECT_EQ(b->min_cosine, VariantBounds{}.min_cosine);
  GoldenAgreement g = Close();
  EXPECT_FALSE(JudgeVariant("int8", 1, "encode", g, {}, {}, *b).passed);
  for (const char* loose :
       {R"({"min_cosine": 0.5})", R"({"max_eval_drop": 0.1})", R"({"min_agreement": 1.5})",
        R"({"max_eval_drop": -1})", R"({"tolerance": 1})", R"({"min_cosine": "high"})", "[]"}) {
    EXPECT_EQ(VariantBounds::Tightened(loose).status().code(), Code::kInvalidInput) << loose;
  }
}

TEST(VariantGate, PrecisionInRuntimeOptions) {
  EXPECT_EQ(PrecisionOf("{}"), "f32");
  EXPECT_EQ(PrecisionOf(R"({"precision": "bf16", "pooling": "mean"})"), "bf16");
  const auto j = nlohmann::json::parse(WithPrecision(R"({"pooling": "mean"})", "int8"));
  EXPECT_EQ(j["precision"], "int8");
  EXPECT_EQ(j["pooling"], "mean");
}

}  // namespace
}  // namespace shoal::admin
