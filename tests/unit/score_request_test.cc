// Score, rerank and tokenize bodies → work items; and the items' and results'
// MessagePack, decoded back by the worker's and gateway's readers.
#include "wire/score_request.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>

#include "wire/item.h"

namespace shoal::wire {
namespace {

ItemFields Decode(const RequestItem& item, Task task) {
  ItemFields f;
  Status s = DecodeItem(item.payload, task, &f);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return f;
}

TEST(ParseScoreJson, OnePairItemPerText) {
  std::string body = R"({"query":"q?","texts":["a","bb"],"truncate":true,"raw_scores":true})";
  WorkRequest r;
  ASSERT_TRUE(ParseScoreJson(body, {}, &r).ok());
  EXPECT_EQ(r.task, Task::kScore);
  ASSERT_EQ(r.items.size(), 2u);
  EXPECT_TRUE(r.options.truncate);
  EXPECT_TRUE(r.raw_scores);
  ItemFields f = Decode(r.items[1], Task::kScore);
  EXPECT_EQ(f.text, "q?");
  EXPECT_EQ(f.text_pair, "bb");
  EXPECT_EQ(r.items[1].cost, EstimateTokens(4));
}

TEST(ParseScoreJson, QueryMayComeAfterTheTexts) {
  std::string body = R"({"texts":["a"],"query":"late"})";
  WorkRequest r;
  ASSERT_TRUE(ParseScoreJson(body, {}, &r).ok());
  EXPECT_EQ(Decode(r.items[0], Task::kScore).text, "late");
}

TEST(ParseScoreJson, Errors) {
  auto error = [](std::string body) {
    WorkRequest r;
    return ParseScoreJson(body, {}, &r).message();
  };
  EXPECT_EQ(error(R"({"texts":["a"]})"), "query: missing");
  EXPECT_EQ(error(R"({"query":"q"})"), "texts: missing");
  EXPECT_EQ(error(R"({"query":"q","texts":[]})"), "texts: must hold at least one item");
  EXPECT_EQ(error(R"({"query":1,"texts":["a"]})"), "query: expected a string, got a number");
  EXPECT_EQ(error(R"({"query":"q","texts":["a",{}]})"), "texts[1]: expected a string, got an object");
  EXPECT_EQ(error(R"({"query":"q","texts":["a"],"top_n":1})"), "body: unknown field 'top_n'");
}

TEST(ParseRerankJson, StringAndObjectDocumentsWithIds) {
  std::string body = R"({"model":"m","query":"q","documents":["a",{"text":"b","id":"x\"y"},{"text":"c","id":7,"title":"t"}],
                         "top_n":2,"return_documents":true})";
  WorkRequest r;
  ASSERT_TRUE(ParseRerankJson(body, {}, &r).ok());
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.items.size(), 3u);
  EXPECT_EQ(r.rerank.top_n, 2u);
  EXPECT_EQ(r.rerank.ids, (std::vector<std::string>{"", R"("x\"y")", "7"})) << "ids echo as sent";
  EXPECT_EQ(r.rerank.texts, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Decode(r.items[2], Task::kScore).text_pair, "c");
}

TEST(ParseRerankJson, Errors) {
  auto error = [](std::string body) {
    WorkRequest r;
    return ParseRerankJson(body, {}, &r).message();
  };
  EXPECT_EQ(error(R"({"query":"q","documents":["a"]})"), "model: missing");
  EXPECT_EQ(error(R"({"model":"m","query":"q"})"), "documents: missing");
  EXPECT_EQ(error(R"({"model":"m","query":"q","documents":[{"id":1}]})"), "documents[0].text: missing");
  EXPECT_EQ(error(R"({"model":"m","query":"q","documents":[{"text":"a","id":[1]}]})"),
            "documents[0].id: expected a string or a number, got an array");
  EXPECT_EQ(error(R"({"model":"m","query":"q","documents":[5]})"),
            "documents[0]: expected a string or an object with \"text\", got a number");
  EXPECT_EQ(error(R"({"model":"m","query":"q","documents":["a"],"top_n":0})"), "top_n: expected a positive integer");
  ParseLimits small;
  small.max_items = 2;
  WorkRequest r;
  std::string many = R"({"model":"m","query":"q","documents":["a","b","c"]})";
  EXPECT_EQ(ParseRerankJson(many, small, &r).message(), "documents: at most 2 items per request (got 3)");
}

TEST(ParseTokenizeJson, StringOrArrayAndTheSpecialTokensFlag) {
  std::string body = R"({"inputs":["a b","c"],"add_special_tokens":false})";
  WorkRequest r;
  ASSERT_TRUE(ParseTokenizeJson(body, {}, &r).ok());
  EXPECT_EQ(r.task, Task::kTokenize);
  ASSERT_EQ(r.items.size(), 2u);
  ItemFields f = Decode(r.items[0], Task::kTokenize);
  EXPECT_EQ(f.text, "a b");
  EXPECT_FALSE(f.add_special_tokens);
  std::string one = R"({"inputs":"x"})";
  WorkRequest r1;
  ASSERT_TRUE(ParseTokenizeJson(one, {}, &r1).ok());
  EXPECT_TRUE(Decode(r1.items[0], Task::kTokenize).add_special_tokens);
}

TEST(WorkMessage, ItemFieldsDependOnTheTask) {
  std::string pair;
  AppendPairItem("q", "d", &pair);
  ItemFields f;
  EXPECT_EQ(DecodeItem(pair, Task::kEncode, &f).message(), "item: unknown field 'text_pair' for encode");
  std::string lone;
  AppendTextItem("q", &lone);
  EXPECT_EQ(DecodeItem(lone, Task::kScore, &f).message(), "item.text_pair: missing");
  Task t;
  EXPECT_TRUE(ParseTask("tokenize", &t));
  EXPECT_EQ(t, Task::kTokenize);
  EXPECT_TRUE(ParseTask("generate", &t));
  EXPECT_EQ(t, Task::kGenerate);
  EXPECT_FALSE(ParseTask("embed", &t));
}

TEST(WorkMessage, TokensAndLogitsResultsReadByAnIndependentDecoder) {
  std::vector<TokenView> tokens = {{101, "[CLS]", true, false, 0, 0}, {7, "hi", false, true, 0, 2}};
  std::string payload;
  AppendTokensResult(tokens, &payload);
  auto h = msgpack::unpack(payload.data(), payload.size());
  auto doc = h.get().as<std::map<std::string, std::vector<std::map<std::string, msgpack::object>>>>();
  const auto& t = doc.at("tokens");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].at("id").as<int>(), 101);
  EXPECT_EQ(t[0].at("text").as<std::string>(), "[CLS]");
  EXPECT_TRUE(t[0].at("start").is_nil());
  EXPECT_EQ(t[1].at("stop").as<int>(), 2);

  const float logits[] = {0.5f, -2.0f};
  std::string lp;
  AppendLogitsResult(logits, 2, &lp);
  std::vector<float> back;
  ASSERT_TRUE(ForEachFloat(lp, "logits", [&](float x) { back.push_back(x); }).ok());
  EXPECT_EQ(back, std::vector<float>({0.5f, -2.0f}));
  EXPECT_FALSE(ForEachDense(lp, [](float) {}).ok()) << "no dense vector in a score result";
}

}  // namespace
}  // namespace shoal::wire
