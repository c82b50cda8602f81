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

// A precompiled_charsmap made by hand in darts-clone's layout, with three
// rules: "A" -> "a", "AB" -> "x", "C" -> "" (a deletion). A unit holds its
// label in bits 0-7, a leaf flag in bit 8 and the offset to its children
// above bit 10; a child sits at parent ^ offset ^ label, a leaf (label 0) at
// parent ^ offset, its value (bit 31 set) the replacement's index.
std::string HandMadeCharsmap(uint32_t bad_value = 0) {
  std::vector<uint32_t> units(1924, 0);
  units[0] = 256u << 10;                                // root: children at 256 ^ byte
  units[256 ^ 'A'] = (512u << 10) | (1u << 8) | 'A';    // "A", a leaf below
  units[(256 ^ 'A') ^ 512] = 0x80000000u | 0;           // "A" -> "a"
  units[(256 ^ 'A') ^ 512 ^ 'B'] = (1024u << 10) | (1u << 8) | 'B';
  units[(256 ^ 'A') ^ 512 ^ 'B' ^ 1024] = 0x80000000u | (bad_value ? bad_value : 2);  // "AB" -> "x"
  units[256 ^ 'C'] = (512u << 10) | (1u << 8) | 'C';
  units[(256 ^ 'C') ^ 512] = 0x80000000u | 4;           // "C" -> ""
  std::string blob;
  auto put = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) blob.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  put(static_cast<uint32_t>(units.size() * 4));
  for (uint32_t u : units) put(u);
  blob.append("a\0x\0\0", 5);
  return blob;
}

std::string Base64(std::string_view bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    for (size_t k = 0; k < 4; ++k) out.push_back(i + k <= bytes.size() ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

std::string PrecompiledJson(std::string_view blob) {
  return R"({"type":"Precompiled","precompiled_charsmap":")" + Base64(blob) + R"("})";
}

TEST(Normalizers, PrecompiledAppliesTheLongestRuleAndAlignsWhatItReplaced) {
  auto r = Apply(PrecompiledJson(HandMadeCharsmap()), "AABzC!");
  EXPECT_EQ(r.text, "axz!");  // "A" -> a, "AB" -> x (not a then B), z kept, C deleted
  Range a = r.ns.Original(0, 1), x = r.ns.Original(1, 2), z = r.ns.Original(2, 3), bang = r.ns.Original(3, 4);
  EXPECT_EQ(a.start, 0u);
  EXPECT_EQ(a.end, 1u);
  EXPECT_EQ(x.start, 1u);
  EXPECT_EQ(x.end, 3u);
  EXPECT_EQ(z.start, 3u);
  EXPECT_EQ(bang.start, 5u);
  EXPECT_EQ(Norm(PrecompiledJson(HandMadeCharsmap()), "caf\xC3\xA9"), "caf\xC3\xA9");  // no rule: kept
}

TEST(Normalizers, PrecompiledWithoutRulesChangesNothing) {
  EXPECT_EQ(Norm(R"({"type":"Precompiled","precompiled_charsmap":null})", "AB C"), "AB C");
  EXPECT_EQ(Norm(R"({"type":"Precompiled","precompiled_charsmap":""})", "AB C"), "AB C");
}

TEST(Normalizers, ACorruptCharsmapIsAClearErrorOrNoRuleNeverACrash) {
  const std::string good = HandMadeCharsmap();
  for (const std::string& json : {std::string(R"({"type":"Precompiled","precompiled_charsmap":"not base64!"})"),
                                  PrecompiledJson(good.substr(0, 3)),      // shorter than its header
                                  PrecompiledJson(good.substr(0, 1000))}) {  // trie cut short
    simdjson::dom::parser parser;
    auto n = tok::ParseNormalizer(ParseJson(parser, json), "normalizer");
    ASSERT_FALSE(n.ok()) << json.substr(0, 80);
    EXPECT_EQ(n.status().code(), Code::kModelLoadFailed);
    EXPECT_NE(n.status().message().find("precompiled_charsmap"), std::string::npos) << n.status().message();
  }
  // A value past the replacements reads as no rule: "AB" falls back to "A" -> a.
  EXPECT_EQ(Norm(PrecompiledJson(HandMadeCharsmap(1u << 20)), "AB"), "aB");
}

}  // namespace
}  // namespace shoal::native::testing
