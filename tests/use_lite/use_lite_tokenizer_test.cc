// UseLiteTokenizer: the examples of /work/shared/notes/use-lite-forward.md §1
// (ids verified against the JS reference), NFKC, the JS quirks on small
// synthetic vocabularies, and invalid UTF-8.
#include "runtime/native/use_lite/use_lite_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace shoal::native {
namespace {

using Ids = std::vector<int32_t>;

const std::string kVocab = std::string(SHOAL_USE_LITE_DIST) + "/vocab.json";

class UseLiteTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kVocab)) return;
    auto t = UseLiteTokenizer::Load(kVocab);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tokenizer_ = std::move(*t).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (tokenizer_ == nullptr) GTEST_SKIP() << "no USE-Lite vocab at " << kVocab;
  }
  static Ids Encode(std::string_view text) { return tokenizer_->Encode(text); }
  static UseLiteTokenizer* tokenizer_;
};
UseLiteTokenizer* UseLiteTokenizerTest::tokenizer_ = nullptr;

TEST_F(UseLiteTokenizerTest, NotesExamples) {
  EXPECT_EQ(Encode("hello world"), (Ids{2002, 102, 311}));
  EXPECT_EQ(Encode("Hello, World!"), (Ids{341, 4125, 8, 1369, 78}));  // case-sensitive
  EXPECT_EQ(Encode(" "), (Ids{30, 30}));
  EXPECT_EQ(Encode("  "), (Ids{30, 30, 30}));  // spaces are not collapsed
  EXPECT_EQ(Encode("10:30"), (Ids{320, 4177}));
  EXPECT_EQ(Encode("The quick brown fox jumps over the lazy dog."),
            (Ids{34, 2280, 3744, 1394, 152, 2009, 7, 132, 9, 6266, 959, 6}));
  Ids url = Encode("http://example.com");
  EXPECT_EQ(url, (Ids{290, 255, 773, 1563, 147, 6, 167}));
}

TEST_F(UseLiteTokenizerTest, EmptyTextHasNoTokens) { EXPECT_TRUE(Encode("").empty()); }

// §1.6: the JS acceptance rule, not textbook Viterbi: a best of exactly 0
// (the null-scored `▁:` family) is replaced by the next candidate.
TEST_F(UseLiteTokenizerTest, ColonQuirk) {
  EXPECT_EQ(Encode(":"), (Ids{30, 57}));       // textbook: [604 ▁:]
  EXPECT_EQ(Encode(":)"), (Ids{30, 57, 52}));  // textbook: [658 ▁:)]
  EXPECT_EQ(Encode(":-) :( :00 :30"), (Ids{30, 57, 24, 52, 4258, 30, 5920, 30, 4177}));
}

// §1.8: adjacent unknowns merge; separated ones do not.
TEST_F(UseLiteTokenizerTest, UnknownsMerge) {
  EXPECT_EQ(Encode("🍕🍕"), (Ids{30, 0}));
  EXPECT_EQ(Encode("日本語のテキスト"), (Ids{30, 0}));
  EXPECT_EQ(Encode("🍕 🍕"), (Ids{30, 0, 30, 0}));
  EXPECT_EQ(Encode("\t"), (Ids{30, 0}));  // tabs are characters, unknown here
  EXPECT_EQ(Encode(std::string("a\0b", 3)), (Ids{11, 0, 151}));
  EXPECT_EQ(Encode("x\u200by"), (Ids{649, 0, 48}));  // ZWSP survives NFKC
  EXPECT_EQ(Encode("\ufeff"), (Ids{30, 0}));
}

// §1.1–1.2: NFKC first, then spaces (including those NFKC made) become ▁.
TEST_F(UseLiteTokenizerTest, Nfkc) {
  EXPECT_EQ(Encode("ﬁnancial ①②③ Ｆｕｌｌｗｉｄｔｈ"), (Ids{1328, 575, 360, 6714, 1580, 29, 128}));
  EXPECT_EQ(Encode("ﬁnancial ①②③ Ｆｕｌｌｗｉｄｔｈ"), Encode("financial 123 Fullwidth"));
  EXPECT_EQ(Encode("e = mc² and H₂O"), (Ids{299, 240, 889, 131, 288, 12, 341, 288, 287}));
  EXPECT_EQ(Encode("\u00a0non-breaking\u00a0space"), (Ids{30, 753, 24, 4551, 23, 1016}));
  EXPECT_EQ(Encode("a\u3000b"), (Ids{11, 464}));
  EXPECT_EQ(Encode("a\u3000b"), Encode("a b"));
  EXPECT_EQ(Encode("café"), (Ids{976, 209, 1133}));
  EXPECT_EQ(Encode("cafe\u0301"), (Ids{976, 209, 1133}));  // composed by NFKC
  EXPECT_EQ(Encode("\u212b"), Encode("\u00c5"));           // Ångström sign → Å
  EXPECT_EQ(Encode("…"), Encode("..."));
}

// §1.4: ids 0..5 are never matched; `”5` keeps its last id (4464).
TEST_F(UseLiteTokenizerTest, VocabQuirks) {
  EXPECT_EQ(Encode("<s></s>"), (Ids{4787, 7, 1431, 5161, 68, 7, 1431}));
  EXPECT_EQ(Encode("He said “5 apples”5 times"), (Ids{125, 80, 77, 411, 5459, 7, 4464, 626}));
  EXPECT_EQ(tokenizer_->vocab_size(), 8000u);
  EXPECT_EQ(tokenizer_->Piece(2002), "▁hell");
  EXPECT_EQ(tokenizer_->Piece(0), "�");
  EXPECT_EQ(tokenizer_->Piece(-1), "");
  EXPECT_EQ(tokenizer_->Piece(8000), "");
}

TEST_F(UseLiteTokenizerTest, InvalidUtf8IsReplacementCharacters) {
  // Each bad sequence reads as U+FFFD, an unknown; no crash, no exception.
  EXPECT_EQ(Encode("a\xff"
                   "b"),
            Encode("a\ufffd"
                   "b"));
  EXPECT_EQ(Encode("\xe2\x82"), Encode("\ufffd"));                  // truncated sequence
  EXPECT_EQ(Encode("\xed\xa0\x80"), Encode("\ufffd\ufffd\ufffd"));  // encoded surrogate
}

// Synthetic vocabularies: the first six entries are the reserved ones.
std::unique_ptr<UseLiteTokenizer> Vocab(const std::string& tail) {
  auto t = UseLiteTokenizer::Parse(
      R"([["�",0],["<s>",0],["</s>",0],["extra_token_id_1",0],["extra_token_id_2",0],["extra_token_id_3",0],)" +
      tail + "]");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(UseLiteTokenizerRules, ZeroBestIsAlwaysReplaced) {
  // 6 ▁, 7 :, 8 ▁: (null → 0). Textbook Viterbi takes [8] (0 > −2); JS
  // accepts ":" after "▁:" because best[2] is exactly 0.
  auto t = Vocab(R"(["▁",-1],[":",-1],["▁:",null])");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode(":"), (Ids{6, 7}));
}

TEST(UseLiteTokenizerRules, TiesGoToTheLaterStart) {
  // ▁a+b and ▁+ab both score −2; the candidate starting later wins.
  auto t = Vocab(R"(["▁",-1],["▁a",-1],["ab",-1],["b",-1])");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("ab"), (Ids{7, 9}));
}

TEST(UseLiteTokenizerRules, BetterScoreWins) {
  auto t = Vocab(R"(["▁",-1],["▁a",-1.5],["ab",-0.25],["b",-1])");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("ab"), (Ids{6, 8}));  // −1.25 beats −2.5
}

TEST(UseLiteTokenizerRules, DuplicatePieceLastWins) {
  auto t = Vocab(R"(["▁",-1],["x",-1],["x",-2])");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("x"), (Ids{6, 8}));
}

TEST(UseLiteTokenizerRules, ReservedPiecesNeverMatch) {
  auto t = Vocab(R"(["▁",-1])");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("<s>"), (Ids{6, 0}));  // `<s>` is not matched: one merged unknown
}

TEST(UseLiteTokenizerRules, UnknownOnlyWhereNoPieceMatches) {
  // "a" begins the piece "ab" but is no piece itself: the JS prefix search
  // finds nothing at "a" + "c", so the unknown arc is added there.
  auto t = Vocab(R"(["▁",-1],["ab",-1])");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->Encode("ac"), (Ids{6, 0}));
  // And the JS oddity that follows (checked against it): in "ab", the unknown
  // arc at "b" scores 0 + best["▁a"] = 0 (position 2 was never reached, so
  // its best is 0), which beats "ab" (−2); position 2 then backtracks as id 0
  // with step 1, and the two unknowns merge.
  EXPECT_EQ(t->Encode("ab"), (Ids{6, 0}));
}

TEST(UseLiteTokenizerRules, BadVocabIsAnError) {
  EXPECT_FALSE(UseLiteTokenizer::Parse("[").ok());
  EXPECT_FALSE(UseLiteTokenizer::Parse("{}").ok());
  EXPECT_FALSE(UseLiteTokenizer::Parse(R"([["a"]])").ok());
  EXPECT_FALSE(UseLiteTokenizer::Parse(R"([["a","x"]])").ok());
  auto missing = UseLiteTokenizer::Load("/nonexistent/vocab.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(missing.status().message().find("/nonexistent/vocab.json"), std::string::npos);
}

}  // namespace
}  // namespace shoal::native
