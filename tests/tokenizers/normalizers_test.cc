// Normalizers on small inputs: the output text and where its bytes came from.
#include "runtime/native/tokenizers/normalizers.h"

#include "tests/tokenizers/test_util.h"

namespace shoal::native::testing {
namespace {

using tok::NormalizedString;
using tok::Range;

struct Normalized {
  std::string text;
  NormalizedString ns;
};

Normalized Apply(const std::string& json, std::string_view input) {
  simdjson::dom::parser parser;
  auto n = tok::ParseNormalizer(ParseJson(parser, json), "normalizer");
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  NormalizedString s(input, 0);
  if (n.ok()) {
    EXPECT_TRUE((*n)->Normalize(s).ok());
  }
  return {s.text(), s};
}

std::string Norm(const std::string& json, std::string_view input) {
  return Apply(json, input).text;
}

TEST(Normalizers, NfcComposesAndMapsTheComposedCharToItsParts) {
  auto r = Apply(R"({"type":"NFC"})", "cafe\xCC\x81!");  // e + U+0301
  EXPECT_EQ(r.text, "caf\xC3\xA9!");                     // é
  Range e = r.ns.Original(3, 5);
  EXPECT_EQ(e.start, 3u);
  EXPECT_EQ(e.end, 6u);  // the two code points "e\u0301"
  Range bang = r.ns.Original(5, 6);
  EXPECT_EQ(bang.start, 6u);
  EXPECT_EQ(bang.end, 7u);
}

TEST(Normalizers, NfcComposesHangulJamo) {
  EXPECT_EQ(Norm(R"({"type":"NFC"})", "\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // 가
}

TEST(Normalizers, NfdNfkcNfkd) {
  EXPECT_EQ(Norm(R"({"type":"NFD"})", "\xC3\xA9"), "e\xCC\x81");
  EXPECT_EQ(Norm(R"({"type":"NFD"})", "\xEA\xB0\x80"), "\xE1\x84\x80\xE1\x85\xA1");
  EXPECT_EQ(Norm(R"({"type":"NFKC"})", "\xEF\xAC\x81 \xE2\x91\xA0"), "fi 1");  // ﬁ ①
  EXPECT_EQ(Norm(R"({"type":"NFKD"})", "\xEF\xBD\xB6"), "\xE3\x82\xAB");       // ｶ → カ
  EXPECT_EQ(Norm(R"({"type":"NFKC"})", "plain ascii"), "plain ascii");
}

TEST(Normalizers, Lowercase) {
  EXPECT_EQ(Norm(R"({"type":"Lowercase"})", "HeLLo WORLD"), "hello world");
  // À É and İ (whose lowercase is two code points: i + U+0307).
  EXPECT_EQ(Norm(R"({"type":"Lowercase"})", "\xC3\x80\xC3\x89 \xC4\xB0"),
            "\xC3\xA0\xC3\xA9 i\xCC\x87");
}

TEST(Normalizers, LowercaseIsPerCharacterWithoutFinalSigma) {
  // The Rust crate lowercases character by character, so a word-final Σ
  // becomes σ, not ς. (JavaScript's toLowerCase, and so @lenml/tokenizers,
  // writes ς: the one place our BERT ids and that reference differ.)
  EXPECT_EQ(Norm(R"({"type":"Lowercase"})", "\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3"),
            "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83");
}

TEST(Normalizers, StripAccentsAfterNfd) {
  EXPECT_EQ(Norm(R"({"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"}]})",
                 "caf\xC3\xA9 na\xC3\xAFve"),
            "cafe naive");
}

TEST(Normalizers, Strip) {
  EXPECT_EQ(Norm(R"({"type":"Strip","strip_left":true,"strip_right":true})", "  hi \t"), "hi");
  EXPECT_EQ(Norm(R"({"type":"Strip","strip_left":true,"strip_right":false})", "  hi  "), "hi  ");
  EXPECT_EQ(Norm(R"({"type":"Strip","strip_left":false,"strip_right":true})", "  hi  "), "  hi");
  auto r = Apply(R"({"type":"Strip","strip_left":true,"strip_right":true})", "  hi  ");
  EXPECT_EQ(r.ns.Original(0, 2).start, 2u);  // offsets still point into the input
}

TEST(Normalizers, ReplaceStringAlignsTheReplacementWithWhatItReplaced) {
  auto r = Apply(R"({"type":"Replace","pattern":{"String":" "},"content":"▁"})", "a b");
  EXPECT_EQ(r.text,
            "a\xE2\x96\x81"
            "b");
  Range sp = r.ns.Original(1, 4);
  EXPECT_EQ(sp.start, 1u);
  EXPECT_EQ(sp.end, 2u);
  Range b = r.ns.Original(4, 5);
  EXPECT_EQ(b.start, 2u);
  EXPECT_EQ(b.end, 3u);
}

TEST(Normalizers, ReplaceRegex) {
  EXPECT_EQ(Norm(R"({"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "})", "a \t\n b  c"),
            "a b c");
  EXPECT_EQ(Norm(R"({"type":"Replace","pattern":{"Regex":"[0-9]"},"content":""})", "a1b22c"),
            "abc");
}

TEST(Normalizers, PrependOnlyToNonEmptyText) {
  const std::string json = R"({"type":"Prepend","prepend":"▁"})";
  EXPECT_EQ(Norm(json, "hi"), "\xE2\x96\x81hi");
  EXPECT_EQ(Norm(json, ""), "");
}

TEST(Normalizers, BertNormalizer) {
  const std::string json =
      R"({"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,)"
      R"("strip_accents":null,"lowercase":true})";
  // Tab → space, NUL dropped, CJK spaced, accents stripped, lowercased.
  EXPECT_EQ(Norm(json, std::string_view("H\xC3\xA9llo\tWORLD\x00\xE4\xBD\xA0\xE5\xA5\xBD", 19)),
            "hello world \xE4\xBD\xA0  \xE5\xA5\xBD ");
}

TEST(Normalizers, BertNormalizerKeepsAccentsWhenAsked) {
  const std::string json =
      R"({"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":false,)"
      R"("strip_accents":false,"lowercase":true})";
  EXPECT_EQ(Norm(json, "CAF\xC3\x89"), "caf\xC3\xA9");
}

TEST(Normalizers, SequenceRunsInOrder) {
  const std::string json =
      R"({"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},)"
      R"({"type":"Lowercase"},{"type":"Replace","pattern":{"String":"a"},"content":"4"}]})";
  EXPECT_EQ(Norm(json,
                 "\xC3\x87"
                 "A VA"),
            "c4 v4");
}

TEST(Normalizers, UnknownTypeIsAClearError) {
  simdjson::dom::parser parser;
  auto n = tok::ParseNormalizer(ParseJson(parser, R"({"type":"Frobnicate"})"), "normalizer");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(n.status().message().find("\"Frobnicate\" is not supported"), std::string::npos);
}

TEST(Normalizers, BadRegexIsAClearError) {
  simdjson::dom::parser parser;
  auto n = tok::ParseNormalizer(
      ParseJson(parser, R"({"type":"Replace","pattern":{"Regex":"(unclosed"},"content":""})"),
      "normalizer");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("(unclosed"), std::string::npos);
}

}  // namespace
}  // namespace shoal::native::testing
