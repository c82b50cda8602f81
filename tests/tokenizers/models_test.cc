// WordPiece, BPE and Unigram on hand-written vocabularies, through whole
// tokenizer.json documents (so parsing is exercised too). Expected ids are
// worked out by hand in the comments.
#include "tests/tokenizers/test_util.h"

namespace shoal::native::testing {
namespace {

using IdList = std::vector<int32_t>;

std::string Doc(const std::string& model, const std::string& pre = "null",
                const std::string& normalizer = "null") {
  return R"({"version":"1.0","added_tokens":[],"normalizer":)" + normalizer +
         R"(,"pre_tokenizer":)" + pre + R"(,"post_processor":null,"model":)" + model + "}";
}

// ---- WordPiece ----

const char* kWordPiece =
    R"({"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",)"
    R"("max_input_chars_per_word":12,"vocab":{"[UNK]":0,"un":1,"##aff":2,"##able":3,)"
    R"("hello":4,"##s":5,"h":6,"##e":7,"caf":8,"##\u00e9":9,",":10}})";

TEST(WordPiece, GreedyLongestMatchWithPrefix) {
  auto t = MustParse(Doc(kWordPiece, R"({"type":"BertPreTokenizer"})"));
  ASSERT_TRUE(t);
  // un ##aff ##able | hello ##s | , | caf ##é
  EXPECT_EQ(Ids(*t, "unaffable hellos, caf\xC3\xA9"), (IdList{1, 2, 3, 4, 5, 10, 8, 9}));
  // "he" → h ##e (no "he" token); "hex": no "##x" → the whole word is [UNK].
  EXPECT_EQ(Ids(*t, "he hex"), (IdList{6, 7, 0}));
}

TEST(WordPiece, LongWordsAreUnknown) {
  auto t = MustParse(Doc(kWordPiece, R"({"type":"WhitespaceSplit"})"));
  ASSERT_TRUE(t);
  // 13 characters > max_input_chars_per_word (12).
  EXPECT_EQ(Ids(*t, "unaffableeeee hello"), (IdList{0, 4}));
}

TEST(WordPiece, OffsetsPointIntoTheInput) {
  auto t = MustParse(Doc(kWordPiece, R"({"type":"WhitespaceSplit"})"));
  ASSERT_TRUE(t);
  auto e = t->Encode("  unaffable", {});
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->offsets.size(), 3u);
  EXPECT_EQ(e->offsets[0], (std::pair<uint32_t, uint32_t>(2, 4)));
  EXPECT_EQ(e->offsets[1], (std::pair<uint32_t, uint32_t>(4, 7)));
  EXPECT_EQ(e->offsets[2], (std::pair<uint32_t, uint32_t>(7, 11)));
}

TEST(WordPiece, MissingUnkIsALoadError) {
  auto t = Tokenizer::Parse(Doc(R"({"type":"WordPiece","unk_token":"[UNK]","vocab":{"a":0}})"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("[UNK]"), std::string::npos);
}

// ---- BPE ----

TEST(BPE, MergesApplyInRankOrder) {
  // Ranks: (a,b)=0 then (ab,c)=1: "abc" → ab c → abc.
  auto t = MustParse(Doc(
      R"({"type":"BPE","vocab":{"a":0,"b":1,"c":2,"ab":3,"abc":4,"bc":5},"merges":["a b","ab c"]})",
      R"({"type":"WhitespaceSplit"})"));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, "abc"), (IdList{4}));
  EXPECT_EQ(Ids(*t, "bca"), (IdList{1, 2, 0}));  // no (b,c) merge listed
  EXPECT_EQ(Ids(*t, "abab c"), (IdList{3, 3, 2}));

  // Ranks reversed: (b,c)=0 first, then no (a,bc) merge: a bc.
  auto u = MustParse(Doc(
      R"({"type":"BPE","vocab":{"a":0,"b":1,"c":2,"ab":3,"abc":4,"bc":5},"merges":[["b","c"],["a","b"]]})",
      R"({"type":"WhitespaceSplit"})"));
  ASSERT_TRUE(u);
  EXPECT_EQ(Ids(*u, "abc"), (IdList{0, 5}));
}

TEST(BPE, EqualRanksMergeLeftmostFirst) {
  // "aaa": (a,a) applies at the left first → aa a.
  auto t = MustParse(Doc(R"({"type":"BPE","vocab":{"a":0,"aa":1},"merges":["a a"]})"));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, "aaa"), (IdList{1, 0}));
  EXPECT_EQ(Ids(*t, "aaaa"), (IdList{1, 1}));
}

TEST(BPE, LongWordsTakeTheHeapPathWithTheSameResult) {
  auto t = MustParse(
      Doc(R"({"type":"BPE","vocab":{"a":0,"aa":1,"aaaa":2,"b":3},"merges":["a a","aa aa"]})"));
  ASSERT_TRUE(t);
  // 101 a's: pairs of aa merge left to right (50 aa + a), then aa+aa → aaaa.
  std::string word(101, 'a');
  IdList want(25, 2);
  want.push_back(0);
  EXPECT_EQ(Ids(*t, word), want);
  EXPECT_EQ(Ids(*t, "aaaaa"), (IdList{2, 0}));  // short path agrees
}

TEST(BPE, ByteLevelVocabulary) {
  // "Ġ" spells the space byte; add_prefix_space turns "hi hi" into " hi"," hi".
  auto t = MustParse(Doc(
      R"({"type":"BPE","vocab":{"h":0,"i":1,"\u0120":2,"hi":3,"\u0120hi":4,"\u00c3":5,"\u00a9":6,"\u00c3\u00a9":7},)"
      R"("merges":["h i","\u0120 hi","\u00c3 \u00a9"]})",
      R"({"type":"ByteLevel","add_prefix_space":true,"use_regex":true})"));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, "hi hi"), (IdList{4, 4}));
  // é is bytes C3 A9, spelled "Ã©" in the byte-level alphabet.
  EXPECT_EQ(Ids(*t, "\xC3\xA9"), (IdList{2, 7}));
}

TEST(BPE, ByteFallbackAndUnk) {
  const std::string vocab = R"("vocab":{"<unk>":0,"<0xC3>":1,"<0xA9>":2,"a":3})";
  auto fb = MustParse(Doc(R"({"type":"BPE",)" + vocab +
                          R"(,"merges":[],"unk_token":"<unk>","byte_fallback":true})"));
  ASSERT_TRUE(fb);
  EXPECT_EQ(Ids(*fb, "a\xC3\xA9"), (IdList{3, 1, 2}));
  EXPECT_EQ(Ids(*fb, "a\xC3\xA8"), (IdList{3, 0}));  // <0xA8> missing: unk

  auto unk = MustParse(Doc(R"({"type":"BPE",)" + vocab + R"(,"merges":[],"unk_token":"<unk>"})"));
  ASSERT_TRUE(unk);
  EXPECT_EQ(Ids(*unk,
                "\xC3\xA9\xC3\xA9"
                "a"),
            (IdList{0, 0, 3}));

  auto fused = MustParse(
      Doc(R"({"type":"BPE",)" + vocab + R"(,"merges":[],"unk_token":"<unk>","fuse_unk":true})"));
  ASSERT_TRUE(fused);
  EXPECT_EQ(Ids(*fused,
                "\xC3\xA9\xC3\xA9"
                "a"),
            (IdList{0, 3}));
}

TEST(BPE, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  const std::string model =
      R"({"type":"BPE","vocab":{"a":0,"b":1,"c":2,"ab":3,"abc":4},"merges":["a b"])";
  auto plain = MustParse(Doc(model + "}"));
  auto ignore = MustParse(Doc(model + R"(,"ignore_merges":true})"));
  ASSERT_TRUE(plain && ignore);
  EXPECT_EQ(Ids(*plain, "abc"), (IdList{3, 2}));
  EXPECT_EQ(Ids(*ignore, "abc"), (IdList{4}));
  EXPECT_EQ(Ids(*ignore, "abca"), (IdList{3, 2, 0}));
}

TEST(BPE, ContinuingSubwordPrefixAndSuffix) {
  // CLIP-style suffix on the last character; "##" prefix on the others.
  auto t = MustParse(Doc(
      R"({"type":"BPE","vocab":{"a":0,"##b":1,"##c</w>":2,"a##b":3,"ab":4,"abc</w>":5,"##bc</w>":6},)"
      R"("continuing_subword_prefix":"##","end_of_word_suffix":"</w>","merges":["a ##b","ab ##c</w>"]})"));
  ASSERT_TRUE(t);
  // a ##b ##c</w> → (a,##b) → "ab" → (ab,##c</w>) → "abc</w>".
  EXPECT_EQ(Ids(*t, "abc"), (IdList{5}));
}

TEST(BPE, TwoModelsInOneThreadDoNotShareCachedWords) {
  // The per-thread word cache is keyed by model: the same word must come out
  // of each model with that model's ids.
  auto one = MustParse(Doc(R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]})"));
  auto two = MustParse(Doc(R"({"type":"BPE","vocab":{"a":5,"b":6,"ab":7},"merges":[]})"));
  ASSERT_TRUE(one && two);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Ids(*one, "ab"), (IdList{2}));
    EXPECT_EQ(Ids(*two, "ab"), (IdList{5, 6}));
  }
}

TEST(BPE, MergeWithUnknownTokenIsALoadError) {
  auto t = Tokenizer::Parse(Doc(R"({"type":"BPE","vocab":{"a":0},"merges":["a zz"]})"));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("model.merges[0]"), std::string::npos);
}

// ---- Unigram ----

const char* kUnigram =
    R"({"type":"Unigram","unk_id":0,"vocab":[["<unk>",0.0],["a",-1.0],["b",-2.0],)"
    R"(["ab",-1.5],["c",-3.0],["<0x78>",-5.0]]})";

TEST(Unigram, ViterbiPicksTheBestSegmentation) {
  auto t = MustParse(Doc(kUnigram));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, "ab"), (IdList{3}));      // ab (-1.5) beats a b (-3)
  EXPECT_EQ(Ids(*t, "abc"), (IdList{3, 4}));  // ab c
  EXPECT_EQ(Ids(*t, "ba"), (IdList{2, 1}));
}

TEST(Unigram, UnknownCharactersFuse) {
  auto t = MustParse(Doc(kUnigram));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, "abyy"), (IdList{3, 0}));  // "yy" → one <unk>
  auto e = t->Encode("abyy", {});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->offsets[1], (std::pair<uint32_t, uint32_t>(2, 4)));
}

TEST(Unigram, ByteFallback) {
  std::string model = kUnigram;
  model.insert(model.size() - 1, R"(,"byte_fallback":true)");
  auto t = MustParse(Doc(model));
  ASSERT_TRUE(t);
  EXPECT_EQ(Ids(*t, "ax"), (IdList{1, 5}));  // x → <0x78>
  EXPECT_EQ(Ids(*t, "ay"), (IdList{1, 0}));  // no <0x79>: unk
}

TEST(Models, UnknownModelTypeIsAClearError) {
  auto t = Tokenizer::Parse(Doc(R"({"type":"WordLevel","vocab":{}})"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(t.status().message().find("model type \"WordLevel\" is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace shoal::native::testing
