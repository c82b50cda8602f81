// Request mixes for `shoal bench` (loadtest/mix.h): the JSONL reader, the
// generated bodies per route, the token estimate; and the usage scan of
// answers (loadtest/usage.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loadtest/mix.h"
#include "loadtest/usage.h"

namespace shoal::loadtest {
namespace {

using nlohmann::json;

TEST(MixJsonl, GoodLines) {
  const std::string text =
      "{\"path\": \"/v1/embeddings\", \"body\": {\"model\": \"m\", \"input\": \"one two three\"}, "
      "\"weight\": 3}\n"
      "\n"
      "{\"path\": \"/v1/encode/org/m\", \"body_text\": \"{\\\"items\\\":[{\\\"text\\\":\\\"a "
      "b\\\"}]}\", "
      "\"content_type\": \"application/json\"}\r\n"
      "{\"path\": \"/v1/rerank\", \"body\": {\"model\": \"r\", \"query\": \"q w\", \"documents\": "
      "[\"x\", {\"text\": "
      "\"y z\", \"id\": \"doc one\"}]}}";
  auto mix = ParseMixJsonl(text, "mix.jsonl");
  ASSERT_TRUE(mix.ok()) << mix.status().ToString();
  ASSERT_EQ(mix->size(), 3u);
  const MixEntry& a = (*mix)[0];
  EXPECT_EQ(a.path, "/v1/embeddings");
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.weight, 3);
  EXPECT_EQ(json::parse(a.body), json::parse(R"({"model":"m","input":"one two three"})"));
  EXPECT_EQ(a.estimated_tokens, 3u) << "the model's name is not text";
  const MixEntry& b = (*mix)[1];
  EXPECT_EQ(b.body, R"({"items":[{"text":"a b"}]})") << "body_text is sent as is";
  EXPECT_EQ(b.weight, 1);
  EXPECT_EQ(b.estimated_tokens, 2u);
  EXPECT_EQ((*mix)[2].estimated_tokens, 5u) << "query and documents, not the ids";
}

TEST(MixJsonl, BadLinesNameTheLine) {
  const struct {
    const char* text;
    const char* expect;
  } cases[] = {
      {"{\"path\": \"/a\", \"body\": {}}\nnot json\n", "mix.jsonl:2: not a JSON value"},
      {"[1, 2]", "mix.jsonl:1: expected an object"},
      {"{\"body\": {}}", "mix.jsonl:1: missing \"path\""},
      {"{\"path\": \"v1/x\", \"body\": {}}",
       "mix.jsonl:1: \"path\": expected a string starting with /"},
      {"{\"path\": \"/x\"}", "mix.jsonl:1: expected exactly one of \"body\" and \"body_text\""},
      {"{\"path\": \"/x\", \"body\": {}, \"body_text\": \"\"}", "exactly one of"},
      {"{\"path\": \"/x\", \"body\": {}, \"weight\": 0}",
       "mix.jsonl:1: \"weight\": expected a positive number"},
      {"{\"path\": \"/x\", \"body\": {}, \"wieght\": 1}", "mix.jsonl:1: unknown field \"wieght\""},
      {"{\"path\": \"/x\", \"body_text\": 7}", "\"body_text\": expected a string"},
      {"\n\n", "mix.jsonl: no requests"},
  };
  for (const auto& c : cases) {
    auto mix = ParseMixJsonl(c.text, "mix.jsonl");
    ASSERT_FALSE(mix.ok()) << c.text;
    EXPECT_EQ(mix.status().code(), Code::kInvalidInput);
    EXPECT_NE(mix.status().message().find(c.expect), std::string::npos)
        << "got: " << mix.status().message() << "\nexpected: " << c.expect;
  }
}

TEST(MixJsonl, AMissingFileIsAnError) {
  auto mix = ReadMixFile("/no/such/mix.jsonl");
  ASSERT_FALSE(mix.ok());
  EXPECT_NE(mix.status().message().find("/no/such/mix.jsonl"), std::string::npos);
}

TEST(GeneratedMix, BodiesByRoute) {
  GeneratedMix g;
  g.model = "org/m";
  g.min_words = g.max_words = 5;
  g.items = 3;
  g.distinct = 4;
  const struct {
    Route route;
    const char* path;
    const char* field;
  } routes[] = {
      {Route::kEncode, "/v1/encode/org/m", "items"},
      {Route::kScore, "/v1/score/org/m", "texts"},
      {Route::kGenerate, "/v1/generate/org/m", "prompt"},
      {Route::kEmbeddings, "/v1/embeddings", "input"},
      {Route::kChat, "/v1/chat/completions", "messages"},
      {Route::kCompletions, "/v1/completions", "prompt"},
      {Route::kRerank, "/v1/rerank", "documents"},
  };
  for (const auto& r : routes) {
    g.route = r.route;
    auto mix = GenerateMix(g);
    ASSERT_TRUE(mix.ok()) << mix.status().ToString();
    ASSERT_EQ(mix->size(), 4u);
    for (const MixEntry& e : *mix) {
      EXPECT_EQ(e.path, r.path);
      EXPECT_EQ(e.content_type, "application/json");
      const json body = json::parse(e.body);
      EXPECT_TRUE(body.contains(r.field)) << e.body;
      EXPECT_GT(e.estimated_tokens, 0u);
    }
  }
  g.route = Route::kEncode;
  auto encode = GenerateMix(g);
  const json body = json::parse((*encode)[0].body);
  ASSERT_EQ(body["items"].size(), 3u);
  EXPECT_EQ((*encode)[0].estimated_tokens, 15u) << "3 items of 5 words";
  g.route = Route::kEmbeddings;
  g.items = 1;
  EXPECT_TRUE(json::parse(GenerateMix(g).value()[0].body)["input"].is_string())
      << "one input: a string";
  g.route = Route::kRerank;
  EXPECT_EQ(json::parse(GenerateMix(g).value()[0].body)["model"], "org/m");
}

TEST(GeneratedMix, SeededAndWithinTheLengths) {
  GeneratedMix g;
  g.model = "m";
  g.min_words = 2;
  g.max_words = 9;
  g.distinct = 50;
  auto a = GenerateMix(g), b = GenerateMix(g);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].body, (*b)[i].body);
    EXPECT_GE((*a)[i].estimated_tokens, 2u);
    EXPECT_LE((*a)[i].estimated_tokens, 9u);
  }
  g.seed = 2;
  EXPECT_NE(GenerateMix(g).value()[0].body, (*a)[0].body);
  g.model = "";
  EXPECT_FALSE(GenerateMix(g).ok());
}

TEST(GeneratedMix, RoutesAndWordRanges) {
  EXPECT_EQ(ParseRoute("embeddings").value(), Route::kEmbeddings);
  EXPECT_EQ(ParseRoute("/v1/chat/completions").value(), Route::kChat);
  EXPECT_EQ(ParseRoute("/v1/encode/").value(), Route::kEncode);
  EXPECT_FALSE(ParseRoute("/v1/embed").ok());
  int lo = 0, hi = 0;
  ASSERT_TRUE(ParseWordRange("16", &lo, &hi).ok());
  EXPECT_EQ(lo, 16);
  EXPECT_EQ(hi, 16);
  ASSERT_TRUE(ParseWordRange("4-64", &lo, &hi).ok());
  EXPECT_EQ(lo, 4);
  EXPECT_EQ(hi, 64);
  for (const char* bad : {"", "0", "8-4", "x", "4-", "4-x", "-4"})
    EXPECT_FALSE(ParseWordRange(bad, &lo, &hi).ok()) << bad;
}

TEST(ParseUsage, EveryShape) {
  // Shoal native (encode, score).
  Usage u = ParseUsage(R"({"model":"m","items":[{"dense":[0.1,0.2]}],"usage":{"tokens":7}})");
  EXPECT_TRUE(u.found);
  EXPECT_EQ(u.input, 7u);
  // OpenAI embeddings and generation.
  u = ParseUsage(R"({"data":[],"usage":{"prompt_tokens":12,"total_tokens":12}})");
  EXPECT_EQ(u.input, 12u);
  EXPECT_EQ(u.output, 0u);
  u = ParseUsage(R"({"choices":[{"text":"say \"usage\": {\"prompt_tokens\": 99}"}],)"
                 R"("usage": {"prompt_tokens": 21, "completion_tokens": 40, "total_tokens": 61,)"
                 R"( "prompt_tokens_details": {"cached_tokens": 16}}})");
  EXPECT_TRUE(u.found);
  EXPECT_EQ(u.input, 21u);
  EXPECT_EQ(u.output, 40u);
  // A stream: the last chunk's usage.
  u = ParseUsage(
      "data: {\"usage\":null}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,"
      "\"completion_tokens\":2}}\n\ndata: [DONE]\n\n");
  EXPECT_EQ(u.input, 3u);
  EXPECT_EQ(u.output, 2u);
  // Cohere rerank.
  u = ParseUsage(
      R"({"results":[],"meta":{"billed_units":{"search_units":1},"tokens":{"input_tokens":18}}})");
  EXPECT_TRUE(u.found);
  EXPECT_EQ(u.input, 18u);
  // None.
  EXPECT_FALSE(ParseUsage(R"([{"index":0,"score":0.9}])").found);
  EXPECT_FALSE(ParseUsage(R"({"usage":null})").found);
  EXPECT_FALSE(ParseUsage("").found);
}

TEST(EstimateTokens, WordsOfTheTexts) {
  EXPECT_EQ(EstimateTokens(
                R"({"model":"a b c","messages":[{"role":"user","content":"one  two\tthree"}]})"),
            3u);
  EXPECT_EQ(EstimateTokens("not json at all"), 4u);
}

}  // namespace
}  // namespace shoal::loadtest
