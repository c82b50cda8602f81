// Grouping a token classifier's scores into entities and ranking a text
// classifier's labels (runtime/extraction.h), on hand-made scores whose
// answers follow from transformers' pipeline rules by hand.
#include "runtime/extraction.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

const std::vector<std::string> kBio = {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"};

// "Ada Lovelace lives in São Paulo" (ã is two bytes): Ada, Love, ##lace,
// lives, in, São, Paulo; "##lace" leans to B-LOC where "Love" says I-PER, so
// the strategies that merge a word's pieces disagree on "Lovelace".
struct Sentence {
  std::string text = "Ada Lovelace lives in S\xC3\xA3o Paulo";
  std::vector<std::vector<float>> scores = {
      {0.025f, 0.9f, 0.025f, 0.025f, 0.025f},  // Ada: B-PER
      {0.05f, 0.05f, 0.8f, 0.05f, 0.05f},      // Love: I-PER
      {0.01f, 0.01f, 0.02f, 0.95f, 0.01f},     // ##lace: B-LOC
      {0.9f, 0.025f, 0.025f, 0.025f, 0.025f},  // lives: O
      {0.95f, 0.0125f, 0.0125f, 0.0125f, 0.0125f},  // in: O
      {0.1f, 0.1f, 0.1f, 0.6f, 0.1f},          // São: B-LOC
      {0.125f, 0.125f, 0.125f, 0.125f, 0.5f},  // Paulo: I-LOC
  };
  std::vector<std::pair<uint32_t, uint32_t>> offsets = {{0, 3}, {4, 8}, {8, 12}, {13, 18}, {19, 21}, {22, 26}, {27, 32}};

  std::vector<ScoredToken> Tokens() const {
    std::vector<ScoredToken> t;
    for (size_t i = 0; i < scores.size(); ++i) {
      t.push_back({scores[i], offsets[i].first, offsets[i].second, i == 2});
    }
    return t;
  }
};

struct Want {
  std::string label;
  float score;
  uint32_t start, end;
  std::string text;
};

void ExpectEntities(const std::vector<Entity>& got, const std::vector<Want>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].label, want[i].label) << i;
    EXPECT_NEAR(got[i].score, want[i].score, 1e-6) << i;
    EXPECT_EQ(got[i].start, want[i].start) << i;
    EXPECT_EQ(got[i].end, want[i].end) << i;
    EXPECT_EQ(got[i].text, want[i].text) << i;
  }
}

TEST(GroupEntities, NoneKeepsEveryTokenAndItsFullLabel) {
  const Sentence s;
  ExpectEntities(GroupEntities(s.text, s.Tokens(), kBio, Aggregation::kNone),
                 {{"B-PER", 0.9f, 0, 3, "Ada"},
                  {"I-PER", 0.8f, 4, 8, "Love"},
                  {"B-LOC", 0.95f, 8, 12, "lace"},
                  {"B-LOC", 0.6f, 22, 25, "S\xC3\xA3o"},
                  {"I-LOC", 0.5f, 26, 31, "Paulo"}});
}

TEST(GroupEntities, SimpleGroupsTokensAndCountsCodePoints) {
  const Sentence s;
  ExpectEntities(GroupEntities(s.text, s.Tokens(), kBio, Aggregation::kSimple),
                 {{"PER", 0.85f, 0, 8, "Ada Love"},
                  {"LOC", 0.95f, 8, 12, "lace"},
                  {"LOC", 0.55f, 22, 31, "S\xC3\xA3o Paulo"}});
}

TEST(GroupEntities, WordStrategiesLabelWholeWords) {
  const Sentence s;
  // first: "Lovelace" takes "Love"'s I-PER.
  ExpectEntities(GroupEntities(s.text, s.Tokens(), kBio, Aggregation::kFirst),
                 {{"PER", 0.85f, 0, 12, "Ada Lovelace"}, {"LOC", 0.55f, 22, 31, "S\xC3\xA3o Paulo"}});
  // max: "##lace"'s 0.95 beats "Love"'s 0.8, so the word is B-LOC.
  ExpectEntities(GroupEntities(s.text, s.Tokens(), kBio, Aggregation::kMax),
                 {{"PER", 0.9f, 0, 3, "Ada"}, {"LOC", 0.95f, 4, 12, "Lovelace"}, {"LOC", 0.55f, 22, 31, "S\xC3\xA3o Paulo"}});
  // average: (0.8 + 0.02) / 2 = 0.41 for I-PER against (0.05 + 0.95) / 2 = 0.5 for B-LOC.
  ExpectEntities(GroupEntities(s.text, s.Tokens(), kBio, Aggregation::kAverage),
                 {{"PER", 0.9f, 0, 3, "Ada"}, {"LOC", 0.5f, 4, 12, "Lovelace"}, {"LOC", 0.55f, 22, 31, "S\xC3\xA3o Paulo"}});
}

TEST(GroupEntities, IobesEndsAndSinglesCloseTheirEntity) {
  const std::vector<std::string> labels = {"O", "B-PER", "I-PER", "E-PER", "S-PER"};
  const std::string text = "a b c d e";
  std::vector<std::vector<float>> scores = {
      {0, 0, 0, 0, 1},  // a: S-PER, one alone
      {0, 1, 0, 0, 0},  // b: B-PER
      {0, 0, 0, 1, 0},  // c: E-PER, ends b's entity
      {0, 0, 1, 0, 0},  // d: I-PER, after an end: a new entity
      {0, 0, 1, 0, 0},  // e: I-PER, continues d
  };
  std::vector<ScoredToken> tokens;
  for (uint32_t i = 0; i < scores.size(); ++i) tokens.push_back({scores[i], 2 * i, 2 * i + 1, false});
  ExpectEntities(GroupEntities(text, tokens, labels, Aggregation::kSimple),
                 {{"PER", 1, 0, 1, "a"}, {"PER", 1, 2, 5, "b c"}, {"PER", 1, 6, 9, "d e"}});
}

TEST(GroupEntities, NothingButOutsideIsNoEntity) {
  const std::vector<float> o = {1, 0, 0, 0, 0};
  const std::vector<ScoredToken> tokens = {{o, 0, 3, false}, {o, 4, 9, false}};
  EXPECT_TRUE(GroupEntities("the thing", tokens, kBio, Aggregation::kSimple).empty());
  EXPECT_TRUE(GroupEntities("the thing", {}, kBio, Aggregation::kFirst).empty());
}

TEST(IsSubword, ByThePrefixOrByTheSpaces) {
  const std::string text = "Ada Lovelace";
  // A tokenizer with a continuing-subword prefix: the piece's length against the text's.
  EXPECT_TRUE(IsSubword(text, 8, 12, "##lace", true, false));
  EXPECT_FALSE(IsSubword(text, 4, 8, "Love", true, false));
  EXPECT_FALSE(IsSubword(text, 8, 12, "##lace", true, true)) << "an unknown token starts a word";
  // Without one: not at the start, not after or at a space.
  EXPECT_TRUE(IsSubword(text, 8, 12, "lace", false, false));
  EXPECT_FALSE(IsSubword(text, 4, 8, "Love", false, false));
  EXPECT_FALSE(IsSubword(text, 0, 3, "Ada", false, false));
  EXPECT_FALSE(IsSubword(text, 3, 8, "\xC4\xA0Love", false, false)) << "a token starting with the space";
}

TEST(RankLabels, SoftmaxOrSigmoidBestFirst) {
  const std::vector<std::string> labels = {"negative", "neutral", "positive"};
  const std::vector<float> logits = {1, 2, 0};
  // e^1, e^2, e^0 over their sum 11.107: 0.2447, 0.6652, 0.0900.
  auto ranked = RankLabels(logits, labels, false, 0);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].label, "neutral");
  EXPECT_NEAR(ranked[0].score, 0.66524, 1e-5);
  EXPECT_EQ(ranked[1].label, "negative");
  EXPECT_NEAR(ranked[1].score, 0.24473, 1e-5);
  EXPECT_EQ(ranked[2].label, "positive");
  ranked = RankLabels(logits, labels, true, 2);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].label, "neutral");
  EXPECT_NEAR(ranked[0].score, 0.88080, 1e-5) << "sigmoid(2)";
  EXPECT_NEAR(ranked[1].score, 0.73106, 1e-5) << "sigmoid(1)";
  // One label: a sigmoid, as transformers does.
  ranked = RankLabels(std::vector<float>{0}, std::vector<std::string>{"yes"}, false, 0);
  ASSERT_EQ(ranked.size(), 1u);
  EXPECT_NEAR(ranked[0].score, 0.5, 1e-6);
}

}  // namespace
}  // namespace shoal
