// Request peeking: the gateway's view of encode bodies, and its error
// messages, which must name the field at fault.
#include "wire/encode_request.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>
#include <tuple>

#include "wire/extract_request.h"
#include "wire/score_request.h"
#include "wire/item.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {
namespace {

// Packs a map with msgpack-cxx (an independent encoder).
class Packer {
 public:
  Packer() : pk_(buf_) {}
  msgpack::packer<msgpack::sbuffer>& operator*() { return pk_; }
  msgpack::packer<msgpack::sbuffer>* operator->() { return &pk_; }
  std::string str() const { return std::string(buf_.data(), buf_.size()); }

 private:
  msgpack::sbuffer buf_;
  msgpack::packer<msgpack::sbuffer> pk_;
};

std::string TextsBody(const std::vector<std::string>& texts) {
  Packer p;
  p->pack_map(1);
  p->pack(std::string("items"));
  p->pack_array(static_cast<uint32_t>(texts.size()));
  for (const auto& t : texts) {
    p->pack_map(1);
    p->pack(std::string("text"));
    p->pack(t);
  }
  return p.str();
}

std::string ItemText(std::string_view payload) {
  std::string_view text;
  EXPECT_TRUE(DecodeTextItem(payload, &text).ok());
  return std::string(text);
}

TEST(ParseEncodeMsgpack, ItemsAreViewsOfTheBodyWithCosts) {
  const std::string body = TextsBody({"hello world", std::string(400, 'a')});
  WorkRequest req;
  ASSERT_TRUE(ParseEncodeMsgpack(body, {}, &req).ok());
  ASSERT_EQ(req.items.size(), 2u);
  EXPECT_EQ(ItemText(req.items[0].payload), "hello world");
  EXPECT_EQ(req.items[1].payload.data() >= body.data() &&
                req.items[1].payload.data() < body.data() + body.size(),
            true)
      << "zero-copy: the item points into the body";
  EXPECT_EQ(req.items[0].cost, EstimateTokens(11));
  EXPECT_EQ(req.items[1].cost, 101u);
  EXPECT_FALSE(req.options.truncate);
  EXPECT_TRUE(req.options.normalize);
}

TEST(ParseEncodeMsgpack, ReadsOptions) {
  Packer p;
  p->pack_map(3);
  p->pack(std::string("truncate"));
  p->pack(true);
  p->pack(std::string("items"));
  p->pack_array(1);
  p->pack_map(1);
  p->pack(std::string("text"));
  p->pack(std::string("x"));
  p->pack(std::string("normalize"));
  p->pack(false);
  WorkRequest req;
  ASSERT_TRUE(ParseEncodeMsgpack(p.str(), {}, &req).ok());
  EXPECT_TRUE(req.options.truncate);
  EXPECT_FALSE(req.options.normalize);
}

TEST(ParseEncodeMsgpack, ReadsTheLoraField) {
  Packer p;
  p->pack_map(2);
  p->pack(std::string("items"));
  p->pack_array(1);
  p->pack_map(1);
  p->pack(std::string("text"));
  p->pack(std::string("x"));
  p->pack(std::string("lora"));
  p->pack(std::string("support-v2"));
  WorkRequest req;
  ASSERT_TRUE(ParseEncodeMsgpack(p.str(), {}, &req).ok());
  EXPECT_EQ(req.lora, "support-v2");

  Packer bad;
  bad->pack_map(2);
  bad->pack(std::string("lora"));
  bad->pack(7);
  bad->pack(std::string("items"));
  bad->pack_array(0);
  Status s = ParseEncodeMsgpack(bad.str(), {}, &req);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("lora: expected a string"), std::string::npos) << s.message();

  WorkRequest none;
  ASSERT_TRUE(ParseEncodeMsgpack(TextsBody({"x"}), {}, &none).ok());
  EXPECT_TRUE(none.lora.empty()) << "no field: the base model";
}

TEST(ParseNativeJson, EveryNativeRouteReadsTheLoraField) {
  std::string encode = R"({"items":[{"text":"a"}],"lora":"legal"})";
  WorkRequest e;
  ASSERT_TRUE(ParseEncodeJson(encode, {}, &e).ok());
  EXPECT_EQ(e.lora, "legal");
  std::string score = R"({"query":"q","texts":["a","b"],"lora":"legal"})";
  WorkRequest s;
  ASSERT_TRUE(ParseScoreJson(score, {}, &s).ok());
  EXPECT_EQ(s.lora, "legal");
  std::string tokenize = R"({"inputs":"a","lora":"legal"})";
  WorkRequest t;
  ASSERT_TRUE(ParseTokenizeJson(tokenize, {}, &t).ok());
  EXPECT_EQ(t.lora, "legal");
  std::string bad = R"({"items":[{"text":"a"}],"lora":["legal"]})";
  WorkRequest b;
  Status st = ParseEncodeJson(bad, {}, &b);
  EXPECT_EQ(st.code(), Code::kInvalidInput);
  EXPECT_NE(st.message().find("lora: expected a string"), std::string::npos) << st.message();
}

struct BadCase {
  std::string name;
  std::string body;
  Code code;
  std::string message_part;
};

TEST(ParseEncodeMsgpack, NamesTheFieldAtFault) {
  std::vector<BadCase> cases;
  cases.push_back({"empty", "", Code::kInvalidInput, "body: empty"});
  cases.push_back({"not a map", "\x93\x01\x02\x03", Code::kInvalidInput, "body: expected a map, got an array"});
  {
    Packer p;
    p->pack_map(1);
    p->pack(std::string("items"));
    p->pack(std::string("oops"));
    cases.push_back({"items not array", p.str(), Code::kInvalidInput, "items: expected an array, got a string"});
  }
  {
    Packer p;
    p->pack_map(1);
    p->pack(std::string("items"));
    p->pack_array(2);
    p->pack_map(1);
    p->pack(std::string("text"));
    p->pack(std::string("ok"));
    p->pack_map(1);
    p->pack(std::string("text"));
    p->pack(42);
    cases.push_back({"text not string", p.str(), Code::kInvalidInput, "items[1].text: expected a string, got an integer"});
  }
  {
    Packer p;
    p->pack_map(1);
    p->pack(std::string("items"));
    p->pack_array(1);
    p->pack_map(0);
    cases.push_back({"text missing", p.str(), Code::kInvalidInput, "items[0].text: missing"});
  }
  {
    Packer p;
    p->pack_map(1);
    p->pack(std::string("items"));
    p->pack_array(0);
    cases.push_back({"no items", p.str(), Code::kInvalidInput, "items: must hold at least one item"});
  }
  {
    Packer p;
    p->pack_map(1);
    p->pack(std::string("normalise"));
    p->pack(true);
    cases.push_back({"unknown field", p.str(), Code::kInvalidInput, "unknown field 'normalise'"});
  }
  {
    Packer p;
    p->pack_map(2);
    p->pack(std::string("items"));
    p->pack_array(1);
    p->pack_map(1);
    p->pack(std::string("text"));
    p->pack(std::string("x"));
    p->pack(std::string("truncate"));
    p->pack(std::string("yes"));
    cases.push_back({"truncate not bool", p.str(), Code::kInvalidInput, "truncate: expected a boolean, got a string"});
  }
  {
    // A str32 that says 1 GiB follows, and 3 bytes do.
    Packer p;
    p->pack_map(1);
    p->pack(std::string("items"));
    p->pack_array(1);
    p->pack_map(1);
    p->pack(std::string("text"));
    std::string body = p.str() + std::string("\xdb\x40\x00\x00\x00" "abc", 8);
    cases.push_back({"text cut short", body, Code::kInvalidInput,
                     "items[0].text: string length runs past the end of the body"});
    cases.push_back({"text header cut short", p.str() + std::string("\xdb\x00", 2), Code::kInvalidInput,
                     "items[0].text: string header runs past the end of the body"});
    cases.push_back({"field name cut short", std::string("\x81\xa5ite", 5), Code::kInvalidInput,
                     "body: string length runs past the end of the body"});
  }
  cases.push_back({"items missing", "\x80", Code::kInvalidInput, "items: missing"});
  {
    std::string body = TextsBody({"abc"});
    body.push_back('\x01');
    cases.push_back({"trailing", body, Code::kInvalidInput, "trailing bytes"});
  }
  {
    std::string body = TextsBody({"abcdef"});
    body.pop_back();
    cases.push_back({"truncated", body, Code::kInvalidInput, "items[0].text"});
  }
  for (const auto& c : cases) {
    WorkRequest req;
    Status s = ParseEncodeMsgpack(c.body, {}, &req);
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.message_part), std::string::npos) << c.name << ": " << s.message();
  }
}

TEST(ParseEncodeMsgpack, LimitsItemsAndItemSize) {
  ParseLimits limits;
  limits.max_items = 3;
  limits.max_item_bytes = 100;
  WorkRequest req;
  Status s = ParseEncodeMsgpack(TextsBody({"a", "b", "c", "d"}), limits, &req);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("at most 3"), std::string::npos);
  s = ParseEncodeMsgpack(TextsBody({"a", std::string(200, 'b')}), limits, &req);
  EXPECT_EQ(s.code(), Code::kPayloadTooLarge);
  EXPECT_NE(s.message().find("items[1]"), std::string::npos) << s.message();
}

TEST(ParseEncodeJson, ReencodesItemsAsMsgpack) {
  std::string body = R"({"items":[{"text":"caf\u00e9 \"q\""},{"text":""}],"truncate":true})";
  WorkRequest req;
  ASSERT_TRUE(ParseEncodeJson(body, {}, &req).ok());
  ASSERT_EQ(req.items.size(), 2u);
  EXPECT_EQ(ItemText(req.items[0].payload), "café \"q\"");
  EXPECT_EQ(ItemText(req.items[1].payload), "");
  EXPECT_TRUE(req.options.truncate);
  // The views survive moving the request.
  WorkRequest moved = std::move(req);
  EXPECT_EQ(ItemText(moved.items[0].payload), "café \"q\"");
}

TEST(ParseEncodeJson, NamesTheFieldAtFault) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "body: empty"},
      {"[1,2]", "body: expected a JSON object"},
      {"{\"items\": 3}", "items: expected an array, got a number"},
      {"{\"items\": [\"x\"]}", "items[0]: expected an object, got a string"},
      {"{\"items\": [{\"text\": null}]}", "items[0].text: expected a string, got null"},
      {"{\"items\": [{\"txt\": \"a\"}]}", "items[0]: unknown field 'txt'"},
      {"{\"items\": [{}]}", "items[0].text: missing"},
      {"{\"items\": []}", "items: must hold at least one item"},
      {"{\"normalize\": 1, \"items\": [{\"text\":\"a\"}]}", "normalize: expected a boolean, got a number"},
      {"{\"items\": [{\"text\": \"a\"}", "malformed JSON"},
      {"{\"items\": [{\"text\": \"a\"}]} x", "malformed JSON"},
      {"{}", "items: missing"},
      {R"({"items": [{"text": "a\ud83d"}]})", "items[0].text: invalid UTF-16 surrogate: a high surrogate alone (\\ud83d)"},
      {R"({"items": [{"text": "\udc00b"}]})", "items[0].text: invalid UTF-16 surrogate: a low surrogate alone (\\udc00)"},
      {R"({"items": [{"text": "\ud83d\u0041"}]})", "items[0].text: invalid UTF-16 surrogate: a high surrogate alone"},
      {R"({"items": [{"text": "\q"}]})", "items[0].text: invalid escape '\\q' in a string"},
      {R"({"items": [{"text": "\u12G4"}]})", "items[0].text: invalid \\u escape in a string"},
  };
  for (const auto& [body_text, want] : cases) {
    std::string body = body_text;
    WorkRequest req;
    Status s = ParseEncodeJson(body, {}, &req);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << body_text;
    EXPECT_NE(s.message().find(want), std::string::npos) << body_text << " -> " << s.message();
  }
}

TEST(ParseOpenAiEmbeddings, StringOrArrayInput) {
  std::string one = R"({"model":"m/1","input":"hello","encoding_format":"base64","dimensions":64})";
  WorkRequest req;
  ASSERT_TRUE(ParseOpenAiEmbeddings(one, {}, &req).ok());
  EXPECT_EQ(req.model, "m/1");
  ASSERT_EQ(req.items.size(), 1u);
  EXPECT_EQ(ItemText(req.items[0].payload), "hello");
  EXPECT_TRUE(req.base64);
  EXPECT_EQ(req.dense.dimensions, 64u);

  std::string many = R"({"input":["a","b","c"],"model":"m"})";
  WorkRequest req2;
  ASSERT_TRUE(ParseOpenAiEmbeddings(many, {}, &req2).ok());
  ASSERT_EQ(req2.items.size(), 3u);
  EXPECT_EQ(ItemText(req2.items[2].payload), "c");
  EXPECT_FALSE(req2.base64);
}

// OpenAI's token-id inputs: one array of ids is one input; an array of
// arrays is several. Each becomes an {"ids": [...]} item costing its length.
TEST(ParseOpenAiEmbeddings, TokenIdInputs) {
  std::string one = R"({"model":"m","input":[101,7592,102]})";
  WorkRequest req;
  ASSERT_TRUE(ParseOpenAiEmbeddings(one, {}, &req).ok());
  ASSERT_EQ(req.items.size(), 1u);
  ItemFields f;
  ASSERT_TRUE(DecodeItem(req.items[0].payload, Task::kEncode, &f).ok());
  EXPECT_EQ(f.ids, (std::vector<int32_t>{101, 7592, 102}));
  EXPECT_TRUE(f.text.empty());
  EXPECT_EQ(req.items[0].cost, 3u);

  std::string many = R"({"model":"m","input":[[1,2],[3]]})";
  WorkRequest req2;
  ASSERT_TRUE(ParseOpenAiEmbeddings(many, {}, &req2).ok());
  ASSERT_EQ(req2.items.size(), 2u);
  ItemFields g;
  ASSERT_TRUE(DecodeItem(req2.items[1].payload, Task::kEncode, &g).ok());
  EXPECT_EQ(g.ids, std::vector<int32_t>{3});

  // Ids are for encoding only; an item may not have both.
  ItemFields h;
  EXPECT_EQ(DecodeItem(req2.items[0].payload, Task::kScore, &h).message(), "item: unknown field 'ids' for score");
  std::string both;
  MsgpackWriter w(&both);
  w.MapHeader(2);
  w.Str("text");
  w.Str("a");
  w.Str("ids");
  w.ArrayHeader(1);
  w.Int(1);
  ItemFields b;
  EXPECT_EQ(DecodeItem(both, Task::kEncode, &b).message(), "item: more than one of text, ids, image and document");
}

TEST(ParseEncodeJson, ASurrogatePairIsOneCharacter) {
  std::string body = R"({"items": [{"text": "fish \ud83d\udc1f"}]})";
  WorkRequest req;
  ASSERT_TRUE(ParseEncodeJson(body, {}, &req).ok());
  EXPECT_EQ(ItemText(req.items[0].payload), "fish \xF0\x9F\x90\x9F");
}

TEST(ParseOpenAiEmbeddings, Errors) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"input":"x"})", "model: missing"},
      {R"({"model":"m"})", "input: missing"},
      {R"({"model":"m","input":[1,"a"]})", "input[1]: input mixes texts and token ids"},
      {R"({"model":"m","input":[[1],2]})", "input[1]: input mixes texts and token ids"},
      {R"({"model":"m","input":[-1]})", "input[0]: expected a token id (a non-negative integer)"},
      {R"({"model":"m","input":[1.5]})", "input[0]: expected a token id"},
      {R"({"model":"m","input":[[1],[]]})", "input[1]: empty"},
      {R"({"model":"m","input":[[1],[2,"x"]]})", "input[1][1]: expected a token id"},
      {R"({"model":"m","input":[]})", "input: must hold at least one item"},
      {R"({"model":"m","input":{"a":1}})", "input: expected a string, an array of strings or token ids"},
      {R"({"model":"m","input":"x","encoding_format":"int8"})", "encoding_format: must be"},
      {R"({"model":"m","input":"x","dimensions":0})", "dimensions: expected a positive integer"},
      {R"({"model":"m","input":"x","dimensions":"64"})", "dimensions: expected a positive integer"},
      {R"({"model":"m","input":"x","user":"u"})", "unknown field 'user'"},
      {R"({"model":7,"input":"x"})", "model: expected a string"},
      {R"({"model":"m","input":"\ud800"})", "input: invalid UTF-16 surrogate: a high surrogate alone"},
      {R"({"model":"m","input":["ok","\udfff"]})", "input[1]: invalid UTF-16 surrogate: a low surrogate alone"},
  };
  for (const auto& [body_text, want] : cases) {
    std::string body = body_text;
    WorkRequest req;
    Status s = ParseOpenAiEmbeddings(body, {}, &req);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << body_text;
    EXPECT_NE(s.message().find(want), std::string::npos) << body_text << " -> " << s.message();
  }
}

TEST(ParseEncodeJson, ReadsDimensionsAndDtype) {
  std::string body = R"({"items":[{"text":"a"}],"dimensions":16,"dtype":"ubinary"})";
  WorkRequest req;
  ASSERT_TRUE(ParseEncodeJson(body, {}, &req).ok());
  EXPECT_EQ(req.dense.dimensions, 16u);
  ASSERT_EQ(req.dense.types.size(), 1u);
  EXPECT_EQ(req.dense.types[0], DenseType::kUbinary);
  EXPECT_TRUE(req.dense.reshapes());

  Packer p;
  p->pack_map(3);
  p->pack(std::string("items"));
  p->pack_array(1);
  p->pack_map(1);
  p->pack(std::string("text"));
  p->pack(std::string("a"));
  p->pack(std::string("dimensions"));
  p->pack(8);
  p->pack(std::string("dtype"));
  p->pack(std::string("int8"));
  const std::string packed = p.str();
  WorkRequest m;
  ASSERT_TRUE(ParseEncodeMsgpack(packed, {}, &m).ok());
  EXPECT_EQ(m.dense.dimensions, 8u);
  EXPECT_EQ(m.dense.types.at(0), DenseType::kInt8);

  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{
           {R"({"items":[{"text":"a"}],"dtype":"int4"})", "dtype: 'int4' is none of"},
           {R"({"items":[{"text":"a"}],"dimensions":-3})", "dimensions: expected a positive integer"}}) {
    std::string b = text;
    WorkRequest r;
    Status s = ParseEncodeJson(b, {}, &r);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << text;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
}

// "output" (a name or a list), "input_type" and the sparse options, in both
// formats; bad values named.
TEST(ParseEncodeJson, ReadsOutputsInputTypeAndSparseOptions) {
  std::string body =
      R"({"items":[{"text":"a"}],"output":["sparse","dense"],"input_type":"query","sparse_top_k":5,"sparse_tokens":true})";
  WorkRequest req;
  ASSERT_TRUE(ParseEncodeJson(body, {}, &req).ok());
  EXPECT_EQ(req.options.outputs, static_cast<OutputKinds>(OutputKind::kSparse) |
                                     static_cast<OutputKinds>(OutputKind::kDense));
  EXPECT_EQ(req.options.role, InputRole::kQuery);
  EXPECT_EQ(req.options.sparse_top_k, 5u);
  EXPECT_TRUE(req.options.sparse_tokens);

  Packer p;
  p->pack_map(3);
  p->pack(std::string("items"));
  p->pack_array(1);
  p->pack_map(1);
  p->pack(std::string("text"));
  p->pack(std::string("a"));
  p->pack(std::string("output"));
  p->pack(std::string("multivector"));
  p->pack(std::string("input_type"));
  p->pack(std::string("document"));
  const std::string packed = p.str();
  WorkRequest m;
  ASSERT_TRUE(ParseEncodeMsgpack(packed, {}, &m).ok());
  EXPECT_EQ(m.options.outputs, static_cast<OutputKinds>(OutputKind::kMultivector));
  EXPECT_EQ(m.options.role, InputRole::kDocument);

  WorkRequest none;
  std::string plain = R"({"items":[{"text":"a"}]})";
  ASSERT_TRUE(ParseEncodeJson(plain, {}, &none).ok());
  EXPECT_EQ(none.options.outputs, 0) << "unsaid: the router settles the model's default";

  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{
           {R"({"items":[{"text":"a"}],"output":"colbert"})", "output: 'colbert' is none of dense, sparse, multivector"},
           {R"({"items":[{"text":"a"}],"output":[]})", "output: an empty list"},
           {R"({"items":[{"text":"a"}],"output":["dense",3]})", "output[1]"},
           {R"({"items":[{"text":"a"}],"input_type":"search_query"})", "input_type: 'search_query' is neither"},
           {R"({"items":[{"text":"a"}],"sparse_top_k":0})", "sparse_top_k: expected a positive integer"},
           {R"({"items":[{"text":"a"}],"sparse_tokens":"yes"})", "sparse_tokens"}}) {
    std::string b = text;
    WorkRequest r;
    Status s = ParseEncodeJson(b, {}, &r);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << text;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
}

TEST(ParseCohereEmbed, ReadsTextsTypesAndOptions) {
  std::string body = R"({"model":"m","texts":["a","b"],"input_type":"search_query",)"
                     R"("embedding_types":["float","int8","ubinary"],"truncate":"NONE","output_dimension":32})";
  WorkRequest req;
  ASSERT_TRUE(ParseCohereEmbed(body, 2, {}, &req).ok());
  EXPECT_EQ(req.model, "m");
  ASSERT_EQ(req.items.size(), 2u);
  EXPECT_EQ(ItemText(req.items[1].payload), "b");
  EXPECT_EQ(req.cohere.version, 2);
  EXPECT_EQ(req.cohere.input_type, "search_query");
  EXPECT_EQ(req.cohere.texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(req.dense.types, (std::vector<DenseType>{DenseType::kFloat32, DenseType::kInt8, DenseType::kUbinary}));
  EXPECT_EQ(req.dense.dimensions, 32u);
  EXPECT_FALSE(req.options.truncate);

  std::string v1 = R"({"model":"m","texts":["a"]})";
  WorkRequest r1;
  ASSERT_TRUE(ParseCohereEmbed(v1, 1, {}, &r1).ok());
  EXPECT_TRUE(r1.options.truncate);  // Cohere's default: END
  EXPECT_FALSE(r1.cohere.by_type);
  EXPECT_TRUE(r1.dense.types.empty());
}

TEST(ParseCohereEmbed, Errors) {
  const std::tuple<int, std::string, std::string> cases[] = {
      {1, R"({"texts":["a"]})", "model: missing"},
      {1, R"({"model":"m"})", "texts: missing"},
      {1, R"({"model":"m","texts":[]})", "texts: must hold at least one item"},
      {1, R"({"model":"m","texts":["a",3]})", "texts[1]: expected a string"},
      {1, R"({"model":"m","texts":["a"],"input_type":"image"})", "input_type: 'image' is none of"},
      {1, R"({"model":"m","texts":["a"],"embedding_types":["base64"]})", "embedding_types[0]: 'base64' is none of"},
      {1, R"({"model":"m","texts":["a"],"embedding_types":["int8","int8"]})", "embedding_types[1]: 'int8' twice"},
      {1, R"({"model":"m","texts":["a"],"truncate":"START"})", "truncate: START is not supported"},
      {1, R"({"model":"m","texts":["a"],"output_dimension":64})", "unknown field 'output_dimension'"},
      {2, R"({"model":"m","texts":["a"],"images":["data:"]})", "unknown field 'images'"},
      {2, R"({"model":"m","texts":["a"],"max_tokens":8})", "unknown field 'max_tokens'"},
  };
  for (const auto& [version, text, want] : cases) {
    std::string body = text;
    WorkRequest req;
    Status s = ParseCohereEmbed(body, version, {}, &req);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << text;
    EXPECT_NE(s.message().find(want), std::string::npos) << text << " -> " << s.message();
  }
}

TEST(PrefixTexts, PutsThePromptBeforeEveryTextAndRecountsTheCost) {
  std::string body = R"({"model":"m","input":["river","a longer text about fish"]})";
  WorkRequest req;
  ASSERT_TRUE(ParseOpenAiEmbeddings(body, {}, &req).ok());
  ASSERT_TRUE(PrefixTexts("query: ", {}, &req).ok());
  ASSERT_EQ(req.items.size(), 2u);
  EXPECT_EQ(ItemText(req.items[0].payload), "query: river");
  EXPECT_EQ(ItemText(req.items[1].payload), "query: a longer text about fish");
  EXPECT_EQ(req.items[1].cost, EstimateTokens(std::string("query: a longer text about fish").size()));
}

TEST(WorkMessage, DenseResultRoundTrip) {
  const float v[] = {0.25f, -1.0f, 3.5f};
  std::string payload;
  AppendDenseResult(v, 3, &payload);
  auto h = msgpack::unpack(payload.data(), payload.size());
  auto m = h.get().as<std::map<std::string, std::vector<float>>>();
  EXPECT_EQ(m.at("dense"), std::vector<float>({0.25f, -1.0f, 3.5f}));
  std::vector<float> back;
  ASSERT_TRUE(ForEachDense(payload, [&](float x) { back.push_back(x); }).ok());
  EXPECT_EQ(back, std::vector<float>({0.25f, -1.0f, 3.5f}));
}

TEST(WorkMessage, DecodeTextItemErrors) {
  std::string_view text;
  EXPECT_FALSE(DecodeTextItem("\x90", &text).ok());
  std::string item;
  AppendTextItem("hi", &item);
  EXPECT_TRUE(DecodeTextItem(item, &text).ok());
  EXPECT_EQ(text, "hi");
  item.push_back('\0');
  EXPECT_FALSE(DecodeTextItem(item, &text).ok());
}

TEST(ParseExtract, ItemsAsEncodeAndTheExtractOptionsInBothFormats) {
  Packer p;
  p->pack_map(4);
  p->pack(std::string("items"));
  p->pack_array(1);
  p->pack_map(1);
  p->pack(std::string("text"));
  p->pack(std::string("Ada Lovelace"));
  p->pack(std::string("aggregation"));
  p->pack(std::string("first"));
  p->pack(std::string("top_k"));
  p->pack(3);
  p->pack(std::string("truncate"));
  p->pack(true);
  const std::string body = p.str();
  WorkRequest packed;
  ASSERT_TRUE(ParseExtractMsgpack(body, {}, &packed).ok());
  EXPECT_EQ(packed.task, Task::kExtract);
  ASSERT_EQ(packed.items.size(), 1u);
  EXPECT_EQ(ItemText(packed.items[0].payload), "Ada Lovelace");
  EXPECT_EQ(packed.extract.aggregation, Aggregation::kFirst);
  EXPECT_EQ(packed.extract.top_k, 3u);
  EXPECT_TRUE(packed.options.truncate);

  std::string json = R"({"items":[{"text":"Ada"}],"aggregation":"none","top_k":1,"lora":"x"})";
  WorkRequest parsed;
  ASSERT_TRUE(ParseExtractJson(json, {}, &parsed).ok());
  EXPECT_EQ(parsed.task, Task::kExtract);
  EXPECT_EQ(parsed.extract.aggregation, Aggregation::kNone);
  EXPECT_EQ(parsed.extract.top_k, 1u);
  EXPECT_EQ(parsed.lora, "x");
  WorkRequest plain;
  std::string bare = R"({"items":[{"text":"Ada"}]})";
  ASSERT_TRUE(ParseExtractJson(bare, {}, &plain).ok());
  EXPECT_FALSE(plain.extract.aggregation) << "absent: the model's default";
  EXPECT_EQ(plain.extract.top_k, 0u);

  for (const auto& [body_json, message] :
       {std::pair{R"({"items":[{"text":"a"}],"aggregation":"best"})",
                  "aggregation: 'best' is none of none, simple, first, average, max"},
        std::pair{R"({"items":[{"text":"a"}],"top_k":-1})", "top_k: expected a positive integer"},
        std::pair{R"({"items":[{"text":"a"}],"top_k":"2"})", "top_k: expected a positive integer"},
        std::pair{R"({"items":[{"text":"a"}],"dimensions":8})", "body: unknown field 'dimensions'"},
        std::pair{R"({"aggregation":"max"})", "items: missing"}}) {
    std::string b = body_json;
    WorkRequest r;
    const Status st = ParseExtractJson(b, {}, &r);
    EXPECT_EQ(st.code(), Code::kInvalidInput) << body_json;
    EXPECT_EQ(st.message(), message) << body_json;
  }
}

}  // namespace
}  // namespace shoal::wire
