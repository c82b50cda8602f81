// The lexer: token boundaries, signs, strings, whitespace control, and the
// positions of tokens and errors in the original source.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/native/chat/jinja_lexer.h"

namespace shoal::native::jinja {
namespace {

using T = TokenType;

std::vector<Token> MustTokenize(const std::string& source) {
  auto tokens = Tokenize(source);
  EXPECT_TRUE(tokens.ok()) << tokens.status().ToString();
  return tokens.ok() ? tokens.value() : std::vector<Token>{};
}

std::vector<T> Types(const std::vector<Token>& tokens) {
  std::vector<T> out;
  for (const Token& t : tokens) out.push_back(t.type);
  return out;
}

TEST(Lexer, SignIsPartOfANumberUnlessItFollowsAnOperand) {
  auto tokens = MustTokenize("{{ x[-1] - 1 + -y }}");
  EXPECT_EQ(Types(tokens),
            (std::vector<T>{T::kOpenExpression, T::kIdentifier, T::kOpenBracket, T::kNumber,
                            T::kCloseBracket, T::kAdditive, T::kNumber, T::kAdditive, T::kUnary,
                            T::kIdentifier, T::kCloseExpression}));
  EXPECT_EQ(tokens[3].value, "-1");
  EXPECT_EQ(tokens[6].value, "1");
}

TEST(Lexer, OperatorsLongestFirst) {
  auto tokens = MustTokenize("{{ a ** b // c <= d != e }}");
  std::vector<std::string> values;
  for (const Token& t : tokens) values.push_back(t.value);
  EXPECT_EQ(values, (std::vector<std::string>{"{{", "a", "**", "b", "//", "c", "<=", "d", "!=", "e",
                                              "}}"}));
}

TEST(Lexer, StringsDecodeEscapes) {
  auto tokens = MustTokenize(R"({{ 'it\'s' "\u00e9\x41\n" }})");
  ASSERT_EQ(tokens.size(), 4u);
  EXPECT_EQ(tokens[1].value, "it's");
  EXPECT_EQ(tokens[2].value,
            "\xC3\xA9"
            "A\n");
}

TEST(Lexer, DictLiteralClosesBeforeTheExpression) {
  auto tokens = MustTokenize("{{ {'a': {'b': 1}} }}");
  EXPECT_EQ(tokens[tokens.size() - 3].type, T::kCloseBrace);
  EXPECT_EQ(tokens[tokens.size() - 2].type, T::kCloseBrace);
  EXPECT_EQ(tokens.back().type, T::kCloseExpression);
}

TEST(Lexer, WhitespaceControlTrimsText) {
  auto tokens = MustTokenize("a \n {%- if x -%} \n b {#- c -#}  d");
  ASSERT_EQ(Types(tokens),
            (std::vector<T>{T::kText, T::kOpenStatement, T::kIdentifier, T::kIdentifier,
                            T::kCloseStatement, T::kText, T::kComment, T::kText}));
  EXPECT_EQ(tokens[0].value, "a");
  EXPECT_EQ(tokens[5].value, "b");
  EXPECT_EQ(tokens[7].value, "d");
}

TEST(Lexer, TrimAndLstripBlocks) {
  // "    {% if x %}\n" keeps neither its indentation nor its newline.
  auto tokens = MustTokenize("a\n    {% if x %}\n    b\n");
  ASSERT_EQ(tokens.size(), 6u);
  EXPECT_EQ(tokens[0].value, "a\n");
  EXPECT_EQ(tokens[5].value, "    b");  // the source's trailing newline is dropped too
}

TEST(Lexer, OffsetsPointIntoTheOriginalSource) {
  std::string source = "x\n    {% if y %}";
  auto tokens = MustTokenize(source);
  ASSERT_EQ(tokens.size(), 5u);
  EXPECT_EQ(tokens[1].offset, source.find("{%"));
  EXPECT_EQ(tokens[3].offset, source.find('y'));
  EXPECT_EQ(Where(source, tokens[3].offset), "line 2, column 11");
}

TEST(Lexer, ErrorsNameLineAndColumn) {
  struct {
    const char* source;
    const char* message;
  } cases[] = {
      {"ok\n{{ 'open }}", "chat template line 2, column 4: string without its closing quote"},
      {"{{ a $ b }}", "chat template line 1, column 6: unexpected character '$'"},
      {"{{ '\\q' }}", "chat template line 1, column 5: unknown escape \\q"},
      {"a {# never closed", "chat template line 1, column 3: comment without #}"},
  };
  for (const auto& c : cases) {
    auto tokens = Tokenize(c.source);
    ASSERT_FALSE(tokens.ok()) << c.source;
    EXPECT_EQ(tokens.status().code(), Code::kModelLoadFailed);
    EXPECT_EQ(tokens.status().message(), c.message);
  }
}

}  // namespace
}  // namespace shoal::native::jinja
