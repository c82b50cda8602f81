// Shadow canaries' parts that need no cluster: the comparison of two
// answers (gateway/answer_comparison.h), the canary's fields
// (catalog/model_spec.h CanarySpec), the monitor's decision on agreement
// (gateway/canary_monitor.h) and the copy of a request's items
// (wire::WorkRequest::Clone). tests/integration/versions_test.cc runs a
// shadow through the cluster.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "catalog/model_spec.h"
#include "gateway/answer_comparison.h"
#include "gateway/canary_monitor.h"
#include "wire/encode_request.h"
#include "wire/msgpack_writer.h"

namespace shoal::gateway {
namespace {

std::string Dense(const std::vector<float>& v) {
  std::string out;
  wire::MsgpackWriter w(&out);
  w.MapHeader(1);
  w.Str("dense");
  w.Float32Array(v.data(), v.size());
  return out;
}

std::string Sparse(const std::vector<uint32_t>& indices, const std::vector<float>& values) {
  std::string out;
  wire::MsgpackWriter w(&out);
  w.MapHeader(1);
  w.Str("sparse");
  w.MapHeader(2);
  w.Str("indices");
  w.ArrayHeader(static_cast<uint32_t>(indices.size()));
  for (uint32_t i : indices) w.Uint(i);
  w.Str("values");
  w.Float32Array(values.data(), values.size());
  return out;
}

std::string Logit(float x) {
  std::string out;
  wire::MsgpackWriter w(&out);
  w.MapHeader(1);
  w.Str("logits");
  w.Float32Array(&x, 1);
  return out;
}

std::string Label(std::string_view best) {
  std::string out;
  wire::MsgpackWriter w(&out);
  w.MapHeader(1);
  w.Str("labels");
  w.ArrayHeader(1);
  w.MapHeader(2);
  w.Str("label");
  w.Str(best);
  w.Str("score");
  w.Float32(0.9f);
  return out;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

TEST(AnswerComparison, EncodeTakesACosinePerItem) {
  const std::vector<std::string> a = {Dense({1, 0, 0}), Dense({0, 1, 0})};
  const std::vector<std::string> b = {Dense({2, 0, 0}), Dense({0, 1, 1})};
  auto c = CompareAnswers(Task::kEncode, Views(a), Views(b));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->vectors, 2u);
  EXPECT_NEAR(c->min_cosine, 1 / std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(c->mean_cosine(), (1 + 1 / std::sqrt(2.0)) / 2, 1e-6);
  EXPECT_EQ(c->judged, 0u) << "an embedding is measured by cosine alone";

  // Another dimension is no likeness.
  c = CompareAnswers(Task::kEncode, Views({Dense({1, 0})}), Views({Dense({1, 0, 0})}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->min_cosine, 0);
}

TEST(AnswerComparison, SparseVectorsAreComparedOverBothIndices) {
  auto c = CompareAnswers(Task::kEncode, Views({Sparse({3, 7}, {1, 1})}),
                          Views({Sparse({7, 9}, {1, 1})}));
  ASSERT_TRUE(c.ok());
  EXPECT_NEAR(c->mean_cosine(), 0.5, 1e-6);  // one shared index of two each
  c = CompareAnswers(Task::kEncode, Views({Sparse({3}, {1})}), Views({Dense({1})}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->vectors, 2u) << "an output one side lacks counts as cosine 0";
  EXPECT_EQ(c->min_cosine, 0);
}

TEST(AnswerComparison, ScoresAreComparedByTheirRanking) {
  const std::vector<std::string> a = {Logit(3), Logit(1), Logit(2)};
  auto c = CompareAnswers(Task::kScore, Views(a), Views({Logit(30), Logit(10), Logit(20)}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->judged, 3u);
  EXPECT_EQ(c->agreed, 3u) << "the same order at another scale agrees";
  c = CompareAnswers(Task::kScore, Views(a), Views({Logit(2), Logit(1), Logit(3)}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->agreed, 2u) << "(0, 2) swapped; (0, 1) and (1, 2) kept";
  c = CompareAnswers(Task::kScore, Views({Logit(1)}), Views({Logit(-1)}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->judged, 0u) << "one item ranks nothing";
}

TEST(AnswerComparison, ExtractionsAreComparedByLabel) {
  auto c = CompareAnswers(Task::kExtract, Views({Label("pos"), Label("neg")}),
                          Views({Label("pos"), Label("pos")}));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->judged, 2u);
  EXPECT_EQ(c->agreed, 1u);
  EXPECT_DOUBLE_EQ(c->agreement(), 0.5);
}

TEST(AnswerComparison, RefusesWhatCannotBeCompared) {
  EXPECT_EQ(CompareAnswers(Task::kEncode, Views({Dense({1})}), {}).status().code(),
            Code::kInvalidInput);
  EXPECT_EQ(CompareAnswers(Task::kTokenize, {}, {}).status().code(), Code::kInvalidInput);
  EXPECT_EQ(CompareAnswers(Task::kEncode, Views({"\xc1"}), Views({Dense({1})})).status().code(),
            Code::kInternal);
}

TEST(CanarySpec, ShadowFieldsParseAndRoundTrip) {
  auto c = CanarySpec::Parse(
      R"({"version": 3, "mode": "shadow", "fraction": 0.25, "min_cosine": 0.99, "min_agreement": 0.9})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->shadow());
  EXPECT_EQ(c->min_cosine, 0.99);
  auto again = CanarySpec::Parse(c->ToJson());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->shadow());
  EXPECT_EQ(again->min_agreement, 0.9);
  EXPECT_EQ(again->fraction, 0.25);
  EXPECT_FALSE(CanarySpec::Parse(R"({"version": 3, "fraction": 0.5})")->shadow());
}

TEST(CanarySpec, RefusesWhatItWouldIgnore) {
  for (const char* body : {
           R"({"version": 3, "fraction": 0.5, "min_cosine": 0.99})",  // split: nothing compared
           R"({"version": 3, "mode": "mirror"})",
           R"({"version": 3, "mode": "shadow", "min_cosine": 1.5})",
           R"({"version": 3, "fraction": 0.5, "sticky": true})",
       }) {
    auto c = CanarySpec::Parse(body);
    EXPECT_EQ(c.status().code(), Code::kInvalidInput) << body;
  }
}

struct Trip {
  std::string model, why;
  uint32_t version = 0;
};

TEST(CanaryMonitor, EndsAShadowThatAgreesTooLittle) {
  std::vector<Trip> trips;
  CanaryMonitor m([&](const std::string& model, uint32_t version, const std::string& why) {
    trips.push_back({model, why, version});
  });
  CanarySpec canary = *CanarySpec::Parse(
      R"({"version": 2, "mode": "shadow", "fraction": 1, "min_requests": 5, "min_cosine": 0.99})");
  AnswerComparison far;
  far.vectors = 1;
  far.cosine_sum = far.min_cosine = 0.5;
  for (int i = 0; i < 4; ++i) m.RecordComparison("team/a", canary, far);
  EXPECT_TRUE(trips.empty()) << "fewer than min_requests compared";
  m.RecordComparison("team/a", canary, far);
  ASSERT_EQ(trips.size(), 1u);
  EXPECT_EQ(trips[0].version, 2u);
  EXPECT_NE(trips[0].why.find("mean cosine 0.5000"), std::string::npos) << trips[0].why;
  m.RecordComparison("team/a", canary, far);
  EXPECT_EQ(trips.size(), 1u) << "decided once";

  const auto seen = nlohmann::json::parse(m.Stats("team/a").ToJson());
  EXPECT_EQ(seen["compared"]["requests"], 6);
  EXPECT_DOUBLE_EQ(seen["compared"]["mean_cosine"].get<double>(), 0.5);
  EXPECT_TRUE(seen["compared"]["agreement"].is_null()) << "no ranking or label was compared";
  EXPECT_NE(m.Text().find("shoal_canary_mean_cosine{model=\"team/a\",version=\"2\"} 0.5"),
            std::string::npos)
      << m.Text();

  // With no bound set, a new model's other answers end nothing.
  canary.version = 3;
  canary.min_cosine = 0;
  for (int i = 0; i < 50; ++i) m.RecordComparison("team/b", canary, far);
  EXPECT_EQ(trips.size(), 1u);
}

TEST(CanaryMonitor, EndsAShadowWhoseRankingDisagrees) {
  std::vector<Trip> trips;
  CanaryMonitor m([&](const std::string& model, uint32_t version, const std::string& why) {
    trips.push_back({model, why, version});
  });
  const CanarySpec canary = *CanarySpec::Parse(
      R"({"version": 4, "mode": "shadow", "fraction": 1, "min_requests": 3, "min_agreement": 0.9})");
  AnswerComparison half;
  half.judged = 10;
  half.agreed = 5;
  AnswerComparison whole;
  whole.judged = whole.agreed = 10;
  for (int i = 0; i < 3; ++i) m.RecordComparison("team/r", canary, whole);
  m.RecordComparison("team/r", canary, half);  // 35 of 40 kept
  ASSERT_EQ(trips.size(), 1u);
  EXPECT_NE(trips[0].why.find("agreement 0.8750"), std::string::npos) << trips[0].why;
}

TEST(WorkRequest, ACloneOwnsItsItemsBytes) {
  std::string body = R"({"model": "m", "input": ["first text", "second"]})";
  wire::WorkRequest original;
  ASSERT_TRUE(wire::ParseOpenAiEmbeddings(body, {}, &original).ok());
  original.lora = "adapter";
  const wire::WorkRequest copy = original.Clone();
  const std::vector<std::string> items = {std::string(original.items[0].payload),
                                          std::string(original.items[1].payload)};
  original = {};
  body.assign(body.size(), 'x');
  ASSERT_EQ(copy.items.size(), 2u);
  EXPECT_EQ(copy.items[0].payload, items[0]);
  EXPECT_EQ(copy.items[1].payload, items[1]);
  EXPECT_EQ(copy.model, "m");
  EXPECT_EQ(copy.lora, "adapter");
  EXPECT_FALSE(copy.items[0].offloaded);
}

}  // namespace
}  // namespace shoal::gateway
