// The whole pipeline: added tokens, post-processors, pairs, truncation,
// offsets, errors and concurrent use.
#include <atomic>
#include <thread>

#include "tests/tokenizers/test_util.h"

namespace shoal::native::testing {
namespace {

using IdList = std::vector<int32_t>;
using Offset = std::pair<uint32_t, uint32_t>;

// A WordPiece vocabulary with BERT-style specials; `extra` adds fields.
std::string BertLike(const std::string& post_processor, const std::string& added = "",
                     const std::string& normalizer = R"({"type":"Lowercase"})") {
  return R"({"version":"1.0","added_tokens":[)"
         R"({"id":0,"content":"[PAD]","special":true,"normalized":false,"lstrip":false,"rstrip":false,"single_word":false},)"
         R"({"id":1,"content":"[UNK]","special":true,"normalized":false,"lstrip":false,"rstrip":false,"single_word":false},)"
         R"({"id":2,"content":"[CLS]","special":true,"normalized":false,"lstrip":false,"rstrip":false,"single_word":false},)"
         R"({"id":3,"content":"[SEP]","special":true,"normalized":false,"lstrip":false,"rstrip":false,"single_word":false})" +
         added + R"(],"normalizer":)" + normalizer +
         R"(,"pre_tokenizer":{"type":"BertPreTokenizer"},"post_processor":)" + post_processor +
         R"(,"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",)"
         R"("vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"hello":4,"world":5,"a":6,"b":7,"c":8,)"
         R"("d":9,"e":10,"f":11,"!":12,"<mask>":13,"##s":14,"x":15}}})";
}

const char* kBertProcessing = R"({"type":"BertProcessing","sep":["[SEP]",3],"cls":["[CLS]",2]})";
const char* kTemplate =
    R"({"type":"TemplateProcessing",)"
    R"("single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}}],)"
    R"("pair":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"[SEP]","type_id":0}},)"
    R"({"Sequence":{"id":"B","type_id":1}},{"SpecialToken":{"id":"[SEP]","type_id":1}}],)"
    R"("special_tokens":{"[CLS]":{"id":"[CLS]","ids":[2],"tokens":["[CLS]"]},"[SEP]":{"id":"[SEP]","ids":[3],"tokens":["[SEP]"]}}})";

TEST(Tokenizer, TemplateProcessingSingleAndPair) {
  auto t = MustParse(BertLike(kTemplate));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, "Hello world!"), (IdList{2, 4, 5, 12, 3}));
  EXPECT_EQ(Ids(*t, "Hello world!", false), (IdList{4, 5, 12}));
  auto p = t->EncodePair("hello", "world a", {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ids, (IdList{2, 4, 3, 5, 6, 3}));
  EXPECT_EQ(p->type_ids, (IdList{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(p->special, (std::vector<uint8_t>{1, 0, 1, 0, 0, 1}));
  // Offsets of the second text point into the second text.
  EXPECT_EQ(p->offsets[3], (Offset{0, 5}));
  EXPECT_EQ(p->offsets[4], (Offset{6, 7}));
  EXPECT_EQ(p->offsets[0], (Offset{0, 0}));
}

TEST(Tokenizer, BertProcessingMatchesTheTemplate) {
  auto t = MustParse(BertLike(kBertProcessing));
  ASSERT_TRUE(t);
  auto p = t->EncodePair("hello", "world a", {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ids, (IdList{2, 4, 3, 5, 6, 3}));
  EXPECT_EQ(p->type_ids, (IdList{0, 0, 0, 1, 1, 1}));
  EncodeOptions plain;
  plain.add_special_tokens = false;
  auto q = t->EncodePair("hello", "world", plain);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->ids, (IdList{4, 5}));
  EXPECT_EQ(q->type_ids, (IdList{0, 1}));
}

TEST(Tokenizer, RobertaProcessingDoublesTheSeparatorAndUsesOneTypeId) {
  auto t = MustParse(BertLike(
      R"({"type":"RobertaProcessing","sep":["[SEP]",3],"cls":["[CLS]",2],"trim_offsets":true,"add_prefix_space":true})"));
  ASSERT_TRUE(t);
  auto p = t->EncodePair("hello", "world", {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ids, (IdList{2, 4, 3, 3, 5, 3}));
  EXPECT_EQ(p->type_ids, (IdList{0, 0, 0, 0, 0, 0}));
}

TEST(Tokenizer, SequencePostProcessor) {
  auto t = MustParse(BertLike(std::string(R"({"type":"Sequence","processors":[)"
                                          R"({"type":"ByteLevel","trim_offsets":false},)") +
                              kTemplate + "]}"));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, "a b"), (IdList{2, 6, 7, 3}));
}

TEST(Tokenizer, SpecialTokensInTextAreMatchedBeforeNormalization) {
  auto t = MustParse(BertLike(kTemplate));
  ASSERT_TRUE(t);
  // "[SEP]" in the text is the special token, not "[", "sep", "]".
  auto e = t->Encode("hello[SEP]world", {});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->ids, (IdList{2, 4, 3, 5, 3}));
  EXPECT_EQ(e->special, (std::vector<uint8_t>{1, 0, 1, 0, 1}));
  EXPECT_EQ(e->offsets[2], (Offset{5, 10}));
  // Lowercased text does not produce it: "[sep]" is not the added token.
  EXPECT_EQ(Ids(*t, "[sep]", false), (IdList{1, 1, 1}));
}

TEST(Tokenizer, AddedTokenFlags) {
  const std::string added =
      R"(,{"id":13,"content":"<mask>","special":true,"normalized":false,"lstrip":true,"rstrip":false,"single_word":false})"
      R"(,{"id":16,"content":"<x>","special":false,"normalized":false,"lstrip":false,"rstrip":true,"single_word":true})"
      R"(,{"id":17,"content":"hey","special":false,"normalized":true,"lstrip":false,"rstrip":false,"single_word":false})";
  auto t = MustParse(BertLike(kTemplate, added));
  ASSERT_TRUE(t);
  // lstrip: "<mask>" takes the spaces before it.
  auto e = t->Encode("a  <mask> b", {});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->ids, (IdList{2, 6, 13, 7, 3}));
  EXPECT_EQ(e->offsets[2], (Offset{1, 9}));
  // single_word: not inside a word; rstrip takes the space after.
  EXPECT_EQ(Ids(*t, "a<x> b", false), (IdList{6, 1, 15, 1, 7}));  // "<", "x", ">" via [UNK]/x
  auto w = t->Encode("a <x> b", {});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->ids, (IdList{2, 6, 16, 7, 3}));
  EXPECT_EQ(w->offsets[2], (Offset{2, 6}));
  EXPECT_EQ(w->special[2], 0);  // a non-special added token
  // normalized: "hey" matches the lowercased "HEY".
  EXPECT_EQ(Ids(*t, "HEY a", false), (IdList{17, 6}));
}

TEST(Tokenizer, OffsetsSurviveNormalizationThatChangesLengths) {
  // Gemma-style: " " → "▁" (1 byte → 3) before a BPE model.
  auto t = MustParse(
      R"({"added_tokens":[],"normalizer":{"type":"Replace","pattern":{"String":" "},"content":"▁"},)"
      R"("pre_tokenizer":null,"post_processor":null,"model":{"type":"BPE","vocab":{"a":0,"b":1,"▁":2,"▁b":3},"merges":["▁ b"]}})");
  ASSERT_TRUE(t);
  auto e = t->Encode("a b", {});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->ids, (IdList{0, 3}));
  EXPECT_EQ(e->offsets[0], (Offset{0, 1}));
  EXPECT_EQ(e->offsets[1], (Offset{1, 3}));
}

TEST(Tokenizer, OverTheLimitIsAnErrorUnlessTruncating) {
  auto t = MustParse(BertLike(kTemplate));
  ASSERT_TRUE(t);
  EncodeOptions o;
  o.max_length = 5;
  auto e = t->Encode("a b c d e f", o);  // 6 + 2 specials = 8 > 5
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kInvalidInput);
  EXPECT_EQ(e.status().message(),
            "input is 8 tokens, over the model's limit of 5; set truncate to cut it");

  o.truncate = true;
  auto cut = t->Encode("a b c d e f", o);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->ids, (IdList{2, 6, 7, 8, 3}));
  EXPECT_TRUE(cut->truncated);
  EXPECT_EQ(cut->untruncated_length, 8u);

  auto fits = t->Encode("a b c", o);
  ASSERT_TRUE(fits.ok());
  EXPECT_FALSE(fits->truncated);
  EXPECT_EQ(fits->untruncated_length, 5u);

  o.max_length = 1;
  auto none = t->Encode("a", o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Code::kInvalidInput);
}

TEST(Tokenizer, PairTruncationIsLongestFirst) {
  auto t = MustParse(BertLike(kTemplate));
  ASSERT_TRUE(t);
  EncodeOptions o;
  o.max_length = 3 + 7;  // 3 specials, 7 for the texts
  o.truncate = true;
  // 2 + 8: the short one fits, the long one gets the rest (5).
  auto p = t->EncodePair("a b", "a b c d e f a b", o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ids, (IdList{2, 6, 7, 3, 6, 7, 8, 9, 10, 3}));
  EXPECT_EQ(p->untruncated_length, 13u);
  // 4 + 4: both cut to half; the second gets the odd token (3 + 4).
  auto q = t->EncodePair("a b c d", "c d e f", o);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->ids, (IdList{2, 6, 7, 8, 3, 8, 9, 10, 11, 3}));
  // 8 + 4: the longer first sequence takes the odd token (4 + 3).
  auto r = t->EncodePair("a b c d e f a b", "c d e f", o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ids, (IdList{2, 6, 7, 8, 9, 3, 8, 9, 10, 3}));
  o.truncate = false;
  auto err = t->EncodePair("a b c d", "c d e f", o);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().message(),
            "input is 11 tokens, over the model's limit of 10; set truncate to cut it");
}

TEST(Tokenizer, VocabularyLookups) {
  auto t = MustParse(BertLike(kTemplate, R"(,{"id":20,"content":"<new>","special":true})"));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->TokenToId("hello"), 4);
  EXPECT_EQ(t->TokenToId("<new>"), 20);
  EXPECT_EQ(t->TokenToId("nope"), std::nullopt);
  EXPECT_EQ(t->IdToToken(5), "world");
  EXPECT_EQ(t->IdToToken(20), "<new>");
  EXPECT_EQ(t->IdToToken(999), "");
  EXPECT_EQ(t->IdToToken(-1), "");
  EXPECT_EQ(t->vocab_size(), 21u);
}

TEST(Tokenizer, EmptyTextGivesOnlyTheSpecialTokens) {
  auto t = MustParse(BertLike(kTemplate));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, ""), (IdList{2, 3}));
  EXPECT_EQ(Ids(*t, "", false), IdList{});
  EXPECT_EQ(Ids(*t, "   ", false), IdList{});
}

TEST(Tokenizer, InvalidUtf8IsInvalidInput) {
  auto t = MustParse(BertLike(kTemplate));
  ASSERT_TRUE(t);
  auto e = t->Encode("ab\xC3(", {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kInvalidInput);
  EXPECT_NE(e.status().message().find("UTF-8"), std::string::npos);
}

TEST(Tokenizer, MalformedDocumentsAreErrorsNotCrashes) {
  auto bad_json = Tokenizer::Parse("{\"model\": {\"type\": \"BPE\", ");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(bad_json.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(bad_json.status().message().find("malformed JSON"), std::string::npos);

  auto not_object = Tokenizer::Parse("[1, 2, 3]");
  ASSERT_FALSE(not_object.ok());

  auto no_model = Tokenizer::Parse(R"({"normalizer": null})");
  ASSERT_FALSE(no_model.ok());
  EXPECT_NE(no_model.status().message().find("model: missing"), std::string::npos);

  auto unknown = Tokenizer::Parse(R"({"model": {"type": "Magic"}})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("model type \"Magic\" is not supported"),
            std::string::npos);

  auto bad_vocab =
      Tokenizer::Parse(R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})");
  ASSERT_FALSE(bad_vocab.ok());
  EXPECT_NE(bad_vocab.status().message().find("model.vocab"), std::string::npos);

  auto bad_added = Tokenizer::Parse(
      R"({"added_tokens": [{"content": "x"}], "model": {"type": "BPE", "vocab": {}, "merges": []}})");
  ASSERT_FALSE(bad_added.ok());
  EXPECT_NE(bad_added.status().message().find("added_tokens[0].id"), std::string::npos);

  auto missing = Tokenizer::LoadFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(missing.status().message().find("/nonexistent/tokenizer.json"), std::string::npos);
}

TEST(Tokenizer, ConcurrentEncodesAgree) {
  auto t = MustParse(
      R"({"added_tokens":[],"normalizer":{"type":"NFC"},)"
      R"("pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\s+|\\p{L}+|\\p{N}"},"behavior":"Isolated","invert":false},)"
      R"("post_processor":null,"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2," ":3,"1":4,"<unk>":5},)"
      R"("merges":["a b"],"unk_token":"<unk>"}})");
  ASSERT_TRUE(t);
  const std::string text = "ab ab 1 abba cafe\xCC\x81 ba";
  const IdList want = Ids(*t, text);
  ASSERT_FALSE(want.empty());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        auto e = t->Encode(text, {});
        if (!e.ok() || e->ids != want) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace shoal::native::testing
