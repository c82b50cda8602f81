// Pre-tokenizers on small inputs: the pieces they cut, and split behaviors.
#include "runtime/native/tokenizers/pre_tokenizers.h"

#include "tests/tokenizers/test_util.h"

namespace shoal::native::testing {
namespace {

using Strings = std::vector<std::string>;

Strings Split(const std::string& json, std::string_view input) {
  simdjson::dom::parser parser;
  auto p = tok::ParsePreTokenizer(ParseJson(parser, json), "pre_tokenizer");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return {};
  tok::PreTokenized pt = Whole(input);
  EXPECT_TRUE((*p)->PreTokenize(pt).ok());
  return Pieces(pt);
}

TEST(PreTokenizers, WhitespaceSplit) {
  EXPECT_EQ(Split(R"({"type":"WhitespaceSplit"})", "  hello   world \n"),
            (Strings{"hello", "world"}));
}

TEST(PreTokenizers, WhitespaceIsUnicodeWhiteSpace) {
  // NEL (U+0085), NBSP and the ideographic space split; ZWSP and BOM do not.
  EXPECT_EQ(Split(R"({"type":"WhitespaceSplit"})",
                  "a\xC2\x85"
                  "b\xC2\xA0"
                  "c\xE3\x80\x80"
                  "d\xE2\x80\x8B"
                  "e\xEF\xBB\xBF"
                  "f"),
            (Strings{"a", "b", "c",
                     "d\xE2\x80\x8B"
                     "e\xEF\xBB\xBF"
                     "f"}));
}

TEST(PreTokenizers, CharDelimiterSplit) {
  EXPECT_EQ(Split(R"({"type":"CharDelimiterSplit","delimiter":"|"})", "a|bc||d"),
            (Strings{"a", "bc", "d"}));
}

TEST(PreTokenizers, WhitespaceSeparatesWordsFromPunctuation) {
  EXPECT_EQ(Split(R"({"type":"Whitespace"})", "Hello, world! it's caf\xC3\xA9..."),
            (Strings{"Hello", ",", "world", "!", "it", "'", "s", "caf\xC3\xA9", "..."}));
}

TEST(PreTokenizers, BertIsolatesEachPunctuationCharacter) {
  EXPECT_EQ(Split(R"({"type":"BertPreTokenizer"})", " Hello, world!! "),
            (Strings{"Hello", ",", "world", "!", "!"}));
  // Unicode punctuation (¿ ¡) splits too.
  EXPECT_EQ(Split(R"({"type":"BertPreTokenizer"})", "\xC2\xBFs\xC3\xAD?"),
            (Strings{"\xC2\xBF", "s\xC3\xAD", "?"}));
}

TEST(PreTokenizers, ByteLevelWithPrefixSpaceAndGpt2Regex) {
  EXPECT_EQ(
      Split(R"({"type":"ByteLevel","add_prefix_space":true,"use_regex":true})", "Hello world's 42"),
      (Strings{" Hello", " world", "'s", " 42"}));
  // A space run before a word: all but the last space stay apart (\s+(?!\S)).
  EXPECT_EQ(
      Split(R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})", "Hello   world"),
      (Strings{"Hello", "  ", " world"}));
  EXPECT_EQ(
      Split(R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})", "Hello world"),
      (Strings{"Hello world"}));
}

TEST(PreTokenizers, SplitBehaviors) {
  auto split = [](const char* behavior) {
    return Split(std::string(R"({"type":"Split","pattern":{"String":"-"},"behavior":")") +
                     behavior + R"(","invert":false})",
                 "the-final--countdown");
  };
  EXPECT_EQ(split("Removed"), (Strings{"the", "final", "countdown"}));
  EXPECT_EQ(split("Isolated"), (Strings{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithPrevious"), (Strings{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithNext"), (Strings{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split("Contiguous"), (Strings{"the", "-", "final", "--", "countdown"}));
}

TEST(PreTokenizers, SplitRegexAndInvert) {
  EXPECT_EQ(
      Split(R"({"type":"Split","pattern":{"Regex":"\\d+"},"behavior":"Isolated","invert":false})",
            "ab12cd345"),
      (Strings{"ab", "12", "cd", "345"}));
  // invert: the pattern describes what to keep; the rest is the delimiter.
  EXPECT_EQ(
      Split(R"({"type":"Split","pattern":{"Regex":"\\w+"},"behavior":"Removed","invert":true})",
            "one, two;three"),
      (Strings{"one", "two", "three"}));
}

TEST(PreTokenizers, SplitWithTheLlama3Pattern) {
  const std::string json =
      R"({"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false})";
  EXPECT_EQ(Split(json, "I'M 12345 don't\n\n  x"),
            (Strings{"I", "'M", " ", "123", "45", " don", "'t", "\n\n", " ", " x"}));
}

TEST(PreTokenizers, MetaspaceSchemes) {
  EXPECT_EQ(
      Split(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true})",
            "Hello big world"),
      (Strings{"\xE2\x96\x81Hello",
               "\xE2\x96\x81"
               "big",
               "\xE2\x96\x81world"}));
  EXPECT_EQ(
      Split(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false})",
            "Hello world"),
      (Strings{"\xE2\x96\x81Hello\xE2\x96\x81world"}));
  EXPECT_EQ(Split(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true})",
                  "Hello world"),
            (Strings{"Hello", "\xE2\x96\x81world"}));
  // Older files: add_prefix_space instead of prepend_scheme.
  EXPECT_EQ(Split(R"({"type":"Metaspace","replacement":"▁","add_prefix_space":true})", "hi"),
            (Strings{"\xE2\x96\x81hi"}));
}

TEST(PreTokenizers, Digits) {
  EXPECT_EQ(Split(R"({"type":"Digits","individual_digits":true})", "abc123de45"),
            (Strings{"abc", "1", "2", "3", "de", "4", "5"}));
  EXPECT_EQ(Split(R"({"type":"Digits","individual_digits":false})", "abc123de45"),
            (Strings{"abc", "123", "de", "45"}));
}

TEST(PreTokenizers, Punctuation) {
  EXPECT_EQ(Split(R"({"type":"Punctuation","behavior":"Isolated"})", "Hey!! you?"),
            (Strings{"Hey", "!", "!", " you", "?"}));
  EXPECT_EQ(Split(R"({"type":"Punctuation","behavior":"Removed"})", "a,b."), (Strings{"a", "b"}));
}

TEST(PreTokenizers, SequenceAppliesEachToEveryPiece) {
  EXPECT_EQ(Split(R"({"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},)"
                  R"({"type":"Digits","individual_digits":true}]})",
                  "ab12 c3"),
            (Strings{"ab", "1", "2", "c", "3"}));
}

TEST(PreTokenizers, ModifiedPiecesKeepTheirOffsets) {
  simdjson::dom::parser parser;
  auto p = tok::ParsePreTokenizer(
      ParseJson(parser, R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always"})"),
      "pre_tokenizer");
  ASSERT_TRUE(p.ok());
  tok::PreTokenized pt = Whole("ab cd");
  ASSERT_TRUE((*p)->PreTokenize(pt).ok());
  ASSERT_EQ(pt.pieces.size(), 2u);
  // "▁cd" comes from " cd" at bytes 2..5 of the input.
  tok::Range r = pt.arena.Original(pt.pieces[1].start, pt.pieces[1].end);
  EXPECT_EQ(r.start, 2u);
  EXPECT_EQ(r.end, 5u);
  // The prepended "▁" of the first piece aligns with its first character.
  tok::Range first = pt.arena.Original(pt.pieces[0].start, pt.pieces[0].end);
  EXPECT_EQ(first.start, 0u);
  EXPECT_EQ(first.end, 2u);
}

TEST(PreTokenizers, UnknownTypeAndBadBehaviorAreClearErrors) {
  simdjson::dom::parser parser;
  auto p = tok::ParsePreTokenizer(ParseJson(parser, R"({"type":"Nope"})"), "pre_tokenizer");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("\"Nope\" is not supported"), std::string::npos);
  simdjson::dom::parser parser2;
  auto q = tok::ParsePreTokenizer(
      ParseJson(parser2, R"({"type":"Split","pattern":{"String":"-"},"behavior":"Sideways"})"),
      "pre_tokenizer");
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("Sideways"), std::string::npos);
}

}  // namespace
}  // namespace shoal::native::testing
