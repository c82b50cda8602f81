#include "runtime/native/chat/jinja_lexer.h"

#include <array>
#include <utility>

#include "runtime/native/chat/jinja_text.h"

namespace shoal::native::jinja {
namespace {

// The source after the trailing-newline, lstrip_blocks and trim_blocks
// rewrites, with the original offset of each byte.
struct Preprocessed {
  std::string text;
  std::vector<uint32_t> origin;
};

Preprocessed Preprocess(std::string_view source) {
  if (!source.empty() && source.back() == '\n') source.remove_suffix(1);

  // lstrip_blocks: [ \t]* at the start of a line, before {% {# or {-.
  Preprocessed lstripped;
  for (size_t i = 0; i < source.size();) {
    bool line_start = i == 0 || source[i - 1] == '\n' || source[i - 1] == '\r';
    if (line_start) {
      size_t j = i;
      while (j < source.size() && (source[j] == ' ' || source[j] == '\t')) ++j;
      if (j + 1 < source.size() && source[j] == '{' &&
          (source[j + 1] == '%' || source[j + 1] == '#' || source[j + 1] == '-')) {
        i = j;
      }
    }
    // Copy up to the next line start.
    do {
      lstripped.text.push_back(source[i]);
      lstripped.origin.push_back(static_cast<uint32_t>(i));
      ++i;
    } while (i < source.size() && source[i - 1] != '\n' && source[i - 1] != '\r');
  }

  // trim_blocks: the newline after %} #} or -}.
  Preprocessed out;
  const std::string& t = lstripped.text;
  for (size_t i = 0; i < t.size(); ++i) {
    bool after_tag =
        i >= 2 && t[i - 1] == '}' && (t[i - 2] == '%' || t[i - 2] == '#' || t[i - 2] == '-');
    if (t[i] == '\n' && after_tag) continue;
    out.text.push_back(t[i]);
    out.origin.push_back(lstripped.origin[i]);
  }
  return out;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Longest first where one sequence starts another ("**" before "*").
constexpr std::array<std::pair<std::string_view, TokenType>, 29> kSymbols = {{
    {"{%", TokenType::kOpenStatement},  {"%}", TokenType::kCloseStatement},
    {"{{", TokenType::kOpenExpression}, {"}}", TokenType::kCloseExpression},
    {"(", TokenType::kOpenParen},       {")", TokenType::kCloseParen},
    {"{", TokenType::kOpenBrace},       {"}", TokenType::kCloseBrace},
    {"[", TokenType::kOpenBracket},     {"]", TokenType::kCloseBracket},
    {",", TokenType::kComma},           {".", TokenType::kDot},
    {":", TokenType::kColon},           {"|", TokenType::kPipe},
    {"<=", TokenType::kComparison},     {">=", TokenType::kComparison},
    {"==", TokenType::kComparison},     {"!=", TokenType::kComparison},
    {"<", TokenType::kComparison},      {">", TokenType::kComparison},
    {"+", TokenType::kAdditive},        {"-", TokenType::kAdditive},
    {"~", TokenType::kAdditive},        {"**", TokenType::kPower},
    {"*", TokenType::kMultiplicative},  {"//", TokenType::kMultiplicative},
    {"/", TokenType::kMultiplicative},  {"%", TokenType::kMultiplicative},
    {"=", TokenType::kEquals},
}};

class Lexer {
 public:
  Lexer(std::string_view source, Preprocessed src) : source_(source), src_(std::move(src)) {}

  Result<std::vector<Token>> Run() {
    const std::string& s = src_.text;
    while (pos_ < s.size()) {
      // Text runs from the start or a closing tag to the next opening tag.
      if (InText()) {
        size_t start = pos_;
        while (pos_ < s.size() && !OpensTag(pos_)) ++pos_;
        if (pos_ > start) {
          Push(TokenType::kText, s.substr(start, pos_ - start), start);
          continue;
        }
      }
      if (At("{#")) {
        SHOAL_RETURN_IF_ERROR(Comment());
        continue;
      }
      if (At("{%-") || At("{{-")) {
        StripTrailingWhitespace();
        bool statement = s[pos_ + 1] == '%';
        Push(statement ? TokenType::kOpenStatement : TokenType::kOpenExpression,
             statement ? "{%" : "{{", pos_);
        curly_depth_ = 0;
        pos_ += 3;
        continue;
      }
      SkipWhitespace();
      if (pos_ >= s.size()) break;
      if (At("-%}") || At("-}}")) {
        bool statement = s[pos_ + 1] == '%';
        Push(statement ? TokenType::kCloseStatement : TokenType::kCloseExpression,
             statement ? "%}" : "}}", pos_);
        pos_ += 3;
        SkipWhitespace();
        continue;
      }
      SHOAL_RETURN_IF_ERROR(Next());
    }
    return std::move(tokens_);
  }

 private:
  bool InText() const {
    if (tokens_.empty()) return true;
    TokenType last = tokens_.back().type;
    return last == TokenType::kCloseStatement || last == TokenType::kCloseExpression ||
           last == TokenType::kComment;
  }

  bool OpensTag(size_t i) const {
    const std::string& s = src_.text;
    return s[i] == '{' && i + 1 < s.size() &&
           (s[i + 1] == '%' || s[i + 1] == '{' || s[i + 1] == '#');
  }

  bool At(std::string_view seq) const {
    return std::string_view(src_.text).substr(pos_, seq.size()) == seq;
  }

  uint32_t Origin(size_t i) const {
    return i < src_.origin.size() ? src_.origin[i] : static_cast<uint32_t>(source_.size());
  }

  void Push(TokenType type, std::string value, size_t at) {
    tokens_.push_back(Token{type, std::move(value), Origin(at)});
  }

  Status Error(const std::string& message, size_t at) const {
    return Status(Code::kModelLoadFailed,
                  "chat template " + Where(source_, Origin(at)) + ": " + message);
  }

  void SkipWhitespace() {
    while (size_t n = WhitespaceAt(src_.text, pos_)) pos_ += n;
  }

  // `{%-` and friends: the text before loses its trailing whitespace.
  void StripTrailingWhitespace() {
    if (tokens_.empty() || tokens_.back().type != TokenType::kText) return;
    std::string& text = tokens_.back().value;
    text.resize(TrimEnd(text).size());
    if (text.empty()) tokens_.pop_back();
  }

  Status Comment() {
    const std::string& s = src_.text;
    size_t start = pos_;
    pos_ += 2;
    bool strip_before = pos_ < s.size() && s[pos_] == '-';
    if (strip_before) ++pos_;
    size_t body = pos_;
    while (!(pos_ + 1 < s.size() && s[pos_] == '#' && s[pos_ + 1] == '}')) {
      if (pos_ + 2 >= s.size()) return Error("comment without #}", start);
      ++pos_;
    }
    bool strip_after = pos_ > body && s[pos_ - 1] == '-';
    if (strip_before) StripTrailingWhitespace();
    Push(TokenType::kComment, "", start);
    pos_ += 2;
    if (strip_after) SkipWhitespace();
    return Status::Ok();
  }

  Status Next() {
    const std::string& s = src_.text;
    char c = s[pos_];
    size_t start = pos_;

    // A sign after an operand is an operator; anywhere else it is part of a
    // number (-1) or a unary operator.
    if (c == '-' || c == '+') {
      if (tokens_.empty() || tokens_.back().type == TokenType::kText) {
        return Error(std::string("unexpected '") + c + "'", start);
      }
      TokenType last = tokens_.back().type;
      bool after_operand = last == TokenType::kIdentifier || last == TokenType::kNumber ||
                           last == TokenType::kString || last == TokenType::kCloseParen ||
                           last == TokenType::kCloseBracket;
      if (!after_operand) {
        ++pos_;
        std::string number = Number();
        if (number.empty()) {
          Push(TokenType::kUnary, std::string(1, c), start);
        } else {
          Push(TokenType::kNumber, c + number, start);
        }
        return Status::Ok();
      }
    }

    for (const auto& [seq, type] : kSymbols) {
      if (seq == "}}" && curly_depth_ > 0) continue;  // closes a dict literal
      if (!At(seq)) continue;
      if (type == TokenType::kOpenExpression) curly_depth_ = 0;
      if (type == TokenType::kOpenBrace) ++curly_depth_;
      if (type == TokenType::kCloseBrace) --curly_depth_;
      Push(type, std::string(seq), start);
      pos_ += seq.size();
      return Status::Ok();
    }

    if (c == '\'' || c == '"') return String(c);
    if (IsDigit(c)) {
      Push(TokenType::kNumber, Number(), start);
      return Status::Ok();
    }
    if (IsWordChar(c)) {
      while (pos_ < s.size() && IsWordChar(s[pos_])) ++pos_;
      Push(TokenType::kIdentifier, s.substr(start, pos_ - start), start);
      return Status::Ok();
    }
    return Error(std::string("unexpected character '") + c + "'", start);
  }

  // Digits, and a fraction unless the number follows a dot (`x.0.1`).
  std::string Number() {
    const std::string& s = src_.text;
    size_t start = pos_;
    while (pos_ < s.size() && IsDigit(s[pos_])) ++pos_;
    bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::kDot;
    if (pos_ > start && !after_dot && pos_ + 1 < s.size() && s[pos_] == '.' &&
        IsDigit(s[pos_ + 1])) {
      ++pos_;
      while (pos_ < s.size() && IsDigit(s[pos_])) ++pos_;
    }
    return s.substr(start, pos_ - start);
  }

  Status String(char quote) {
    const std::string& s = src_.text;
    size_t start = pos_++;
    std::string value;
    while (true) {
      if (pos_ >= s.size()) return Error("string without its closing quote", start);
      char c = s[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        value.push_back(c);
        continue;
      }
      if (pos_ >= s.size()) return Error("string without its closing quote", start);
      char e = s[pos_++];
      switch (e) {
        case 'n':
          value.push_back('\n');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 'b':
          value.push_back('\b');
          break;
        case 'f':
          value.push_back('\f');
          break;
        case 'v':
          value.push_back('\v');
          break;
        case '\'':
        case '"':
        case '\\':
          value.push_back(e);
          break;
        case 'x':
        case 'u': {
          size_t digits = e == 'x' ? 2 : 4;
          uint32_t cp = 0;
          for (size_t i = 0; i < digits; ++i) {
            int h = pos_ < s.size() ? HexValue(s[pos_]) : -1;
            if (h < 0) return Error(std::string("bad \\") + e + " escape", pos_);
            cp = cp * 16 + static_cast<uint32_t>(h);
            ++pos_;
          }
          AppendUtf8(cp, &value);
          break;
        }
        default:
          return Error(std::string("unknown escape \\") + e, pos_ - 2);
      }
    }
    Push(TokenType::kString, std::move(value), start);
    return Status::Ok();
  }

  std::string_view source_;
  Preprocessed src_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int curly_depth_ = 0;  // open `{` of dict literals in this expression
};

}  // namespace

Result<std::vector<Token>> Tokenize(std::string_view source) {
  return Lexer(source, Preprocess(source)).Run();
}

std::string Where(std::string_view source, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace shoal::native::jinja
