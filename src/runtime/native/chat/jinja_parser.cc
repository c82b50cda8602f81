#include "runtime/native/chat/jinja_parser.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <initializer_list>

namespace shoal::native::jinja {
namespace {

class Parser {
 public:
  Parser(std::string_view source, const std::vector<Token>& tokens)
      : source_(source), tokens_(tokens) {}

  Result<Program> Run() {
    Program program;
    while (!AtEnd()) SHOAL_RETURN_IF_ERROR(ParseAny(&program.body));
    return program;
  }

 private:
  // Counts the parser's own recursion (parentheses, `not not`, nested
  // blocks), which no tree height can bound before the tree exists.
  class Nest {
   public:
    explicit Nest(Parser* p) : p_(p) { ++p_->depth_; }
    ~Nest() { --p_->depth_; }
    Status Check() const {
      return p_->depth_ > kMaxNesting
                 ? p_->Error("nested deeper than " + std::to_string(kMaxNesting))
                 : Status::Ok();
    }

   private:
    Parser* p_;
  };

  // ---- Token access ----

  bool AtEnd() const { return pos_ >= tokens_.size(); }
  bool Is(TokenType type, size_t ahead = 0) const {
    return pos_ + ahead < tokens_.size() && tokens_[pos_ + ahead].type == type;
  }
  bool IsName(std::string_view name, size_t ahead = 0) const {
    return Is(TokenType::kIdentifier, ahead) && tokens_[pos_ + ahead].value == name;
  }
  // `{% name` for one of `names`.
  bool IsStatement(std::initializer_list<std::string_view> names) const {
    if (!Is(TokenType::kOpenStatement)) return false;
    for (std::string_view name : names) {
      if (IsName(name, 1)) return true;
    }
    return false;
  }
  uint32_t Offset() const {
    return AtEnd() ? static_cast<uint32_t>(source_.size()) : tokens_[pos_].offset;
  }

  Status Error(const std::string& message) const {
    std::string what = AtEnd() ? "end of template" : "'" + tokens_[pos_].value + "'";
    if (!AtEnd() && tokens_[pos_].type == TokenType::kText) what = "text";
    return Status(Code::kModelLoadFailed, "chat template " + Where(source_, Offset()) + ": " +
                                              message + " (at " + what + ")");
  }

  Status Expect(TokenType type, const char* what) {
    if (!Is(type)) return Error(std::string("expected ") + what);
    ++pos_;
    return Status::Ok();
  }
  Status ExpectName(std::string_view name) {
    if (!IsName(name)) return Error("expected '" + std::string(name) + "'");
    ++pos_;
    return Status::Ok();
  }
  // `{% name %}`, closing a block.
  Status ExpectEnd(std::string_view name) {
    SHOAL_RETURN_IF_ERROR(Expect(TokenType::kOpenStatement, "'{%'"));
    SHOAL_RETURN_IF_ERROR(ExpectName(name));
    return Expect(TokenType::kCloseStatement, "'%}'");
  }

  // ---- Node construction: every node knows its height, bounded here ----

  Result<ExprPtr> Node(ExprKind kind, uint32_t offset, std::vector<ExprPtr> args,
                       std::string name = "") {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->offset = offset;
    e->name = std::move(name);
    e->args = std::move(args);
    for (const auto& a : e->args) {
      if (a) e->height = std::max(e->height, a->height + 1);
    }
    if (e->height > kMaxNesting) {
      return Error("expression nested deeper than " + std::to_string(kMaxNesting));
    }
    return e;
  }
  template <class... A>
  static std::vector<ExprPtr> Args(A... a) {
    std::vector<ExprPtr> v;
    (v.push_back(std::move(a)), ...);
    return v;
  }

  // ---- Statements ----

  static Stmt NewStmt(StmtKind kind, uint32_t offset) {
    Stmt s;
    s.kind = kind;
    s.offset = offset;
    return s;
  }

  Status ParseAny(std::vector<Stmt>* out) {
    const Token& t = tokens_[pos_];
    switch (t.type) {
      case TokenType::kComment:
        ++pos_;
        return Status::Ok();
      case TokenType::kText: {
        Stmt s = NewStmt(StmtKind::kText, t.offset);
        s.text = t.value;
        ++pos_;
        out->push_back(std::move(s));
        return Status::Ok();
      }
      case TokenType::kOpenExpression: {
        Stmt s = NewStmt(StmtKind::kOutput, t.offset);
        ++pos_;
        SHOAL_ASSIGN_OR_RETURN(s.expr, ParseExpression());
        SHOAL_RETURN_IF_ERROR(Expect(TokenType::kCloseExpression, "'}}'"));
        out->push_back(std::move(s));
        return Status::Ok();
      }
      case TokenType::kOpenStatement:
        return ParseStatement(out);
      default:
        return Error("unexpected token");
    }
  }

  // The endfor or endif among a block's `ends`.
  static std::string_view Closing(std::initializer_list<std::string_view> ends) {
    for (std::string_view end : ends) {
      if (end.substr(0, 3) == "end") return end;
    }
    return *ends.begin();
  }

  // Statements until `{% name` for one of `ends`.
  Status ParseBlock(std::initializer_list<std::string_view> ends, std::vector<Stmt>* out) {
    Nest nest(this);
    SHOAL_RETURN_IF_ERROR(nest.Check());
    while (!IsStatement(ends)) {
      if (AtEnd()) return Error("missing {% " + std::string(Closing(ends)) + " %}");
      SHOAL_RETURN_IF_ERROR(ParseAny(out));
    }
    return Status::Ok();
  }

  Status ParseStatement(std::vector<Stmt>* out) {
    ++pos_;  // {%
    if (!Is(TokenType::kIdentifier)) return Error("expected a statement name");
    Stmt s = NewStmt(StmtKind::kText, tokens_[pos_].offset);
    std::string name = tokens_[pos_++].value;
    if (name == "set") {
      SHOAL_RETURN_IF_ERROR(ParseSet(&s));
    } else if (name == "if") {
      SHOAL_RETURN_IF_ERROR(ParseIf(&s));
      SHOAL_RETURN_IF_ERROR(ExpectEnd("endif"));
    } else if (name == "for") {
      SHOAL_RETURN_IF_ERROR(ParseFor(&s));
      SHOAL_RETURN_IF_ERROR(ExpectEnd("endfor"));
    } else {
      --pos_;
      return Error("unsupported statement '" + name + "'");
    }
    out->push_back(std::move(s));
    return Status::Ok();
  }

  Status ParseSet(Stmt* s) {
    s->kind = StmtKind::kSet;
    SHOAL_ASSIGN_OR_RETURN(s->target, ParseSequence(false));
    if (!Assignable(*s->target, /*allow_attribute=*/true)) {
      return Error("set needs a name, names or namespace.attribute");
    }
    if (!Is(TokenType::kEquals)) return Error("expected '=' (block set is not supported)");
    ++pos_;
    SHOAL_ASSIGN_OR_RETURN(s->expr, ParseSequence(false));
    return Expect(TokenType::kCloseStatement, "'%}'");
  }

  static bool Assignable(const Expr& e, bool allow_attribute) {
    if (e.kind == ExprKind::kName) return true;
    if (allow_attribute && e.kind == ExprKind::kAttribute)
      return e.args[0]->kind == ExprKind::kName;
    if (e.kind != ExprKind::kTuple) return false;
    for (const auto& item : e.args) {
      if (item->kind != ExprKind::kName) return false;
    }
    return true;
  }

  // After `if`; an elif becomes an If alone in `orelse`, sharing the endif.
  Status ParseIf(Stmt* s) {
    s->kind = StmtKind::kIf;
    SHOAL_ASSIGN_OR_RETURN(s->expr, ParseExpression());
    SHOAL_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
    SHOAL_RETURN_IF_ERROR(ParseBlock({"elif", "else", "endif"}, &s->body));
    if (IsStatement({"elif"})) {
      pos_ += 2;
      Stmt elif = NewStmt(StmtKind::kIf, tokens_[pos_ - 1].offset);
      SHOAL_RETURN_IF_ERROR(ParseIf(&elif));
      s->orelse.push_back(std::move(elif));
    } else if (IsStatement({"else"})) {
      pos_ += 2;
      SHOAL_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
      SHOAL_RETURN_IF_ERROR(ParseBlock({"endif"}, &s->orelse));
    }
    return Status::Ok();
  }

  Status ParseFor(Stmt* s) {
    s->kind = StmtKind::kFor;
    SHOAL_ASSIGN_OR_RETURN(s->target, ParseSequence(true));
    if (!Assignable(*s->target, /*allow_attribute=*/false)) {
      return Error("for needs a name or names before 'in'");
    }
    SHOAL_RETURN_IF_ERROR(ExpectName("in"));
    SHOAL_ASSIGN_OR_RETURN(s->expr, ParseExpression());
    if (s->expr->kind == ExprKind::kSelect) {  // for x in xs if cond
      ExprPtr select = std::move(s->expr);
      s->expr = std::move(select->args[0]);
      s->condition = std::move(select->args[1]);
    }
    SHOAL_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
    SHOAL_RETURN_IF_ERROR(ParseBlock({"endfor", "else"}, &s->body));
    if (IsStatement({"else"})) {
      pos_ += 2;
      SHOAL_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
      SHOAL_RETURN_IF_ERROR(ParseBlock({"endfor"}, &s->orelse));
    }
    return Status::Ok();
  }

  // ---- Expressions ----

  // `a` or the tuple `a, b, ...` (of primaries only for a for's target).
  Result<ExprPtr> ParseSequence(bool primary) {
    uint32_t offset = Offset();
    std::vector<ExprPtr> items;
    do {
      if (!items.empty()) ++pos_;  // the comma
      SHOAL_ASSIGN_OR_RETURN(ExprPtr e, primary ? ParsePrimary() : ParseExpression());
      items.push_back(std::move(e));
    } while (Is(TokenType::kComma));
    if (items.size() == 1) return std::move(items[0]);
    return Node(ExprKind::kTuple, offset, std::move(items));
  }

  Result<ExprPtr> ParseExpression() {
    Nest nest(this);
    SHOAL_RETURN_IF_ERROR(nest.Check());
    uint32_t offset = Offset();
    SHOAL_ASSIGN_OR_RETURN(ExprPtr value, ParseOr());
    if (!IsName("if")) return value;
    ++pos_;
    SHOAL_ASSIGN_OR_RETURN(ExprPtr test, ParseOr());
    if (!IsName("else"))
      return Node(ExprKind::kSelect, offset, Args(std::move(value), std::move(test)));
    ++pos_;
    SHOAL_ASSIGN_OR_RETURN(ExprPtr otherwise, ParseExpression());
    return Node(ExprKind::kTernary, offset,
                Args(std::move(value), std::move(test), std::move(otherwise)));
  }

  Result<ExprPtr> ParseOr() {
    SHOAL_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (IsName("or")) {
      uint32_t offset = Offset();
      ++pos_;
      SHOAL_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      SHOAL_ASSIGN_OR_RETURN(
          left, Node(ExprKind::kBinary, offset, Args(std::move(left), std::move(right)), "or"));
    }
    return left;
  }

  Result<ExprPtr> ParseAnd() {
    SHOAL_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (IsName("and")) {
      uint32_t offset = Offset();
      ++pos_;
      SHOAL_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      SHOAL_ASSIGN_OR_RETURN(
          left, Node(ExprKind::kBinary, offset, Args(std::move(left), std::move(right)), "and"));
    }
    return left;
  }

  Result<ExprPtr> ParseNot() {
    if (!IsName("not")) return ParseComparison();
    Nest nest(this);
    SHOAL_RETURN_IF_ERROR(nest.Check());
    uint32_t offset = Offset();
    ++pos_;
    SHOAL_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
    return Node(ExprKind::kUnary, offset, Args(std::move(operand)), "not");
  }

  Result<ExprPtr> ParseComparison() {
    SHOAL_ASSIGN_OR_RETURN(ExprPtr left, ParseBinary(TokenType::kAdditive));
    while (true) {
      uint32_t offset = Offset();
      std::string op;
      if (IsName("not") && IsName("in", 1)) {
        op = "not in";
        pos_ += 2;
      } else if (IsName("in") || Is(TokenType::kComparison)) {
        op = tokens_[pos_++].value;
      } else {
        return left;
      }
      SHOAL_ASSIGN_OR_RETURN(ExprPtr right, ParseBinary(TokenType::kAdditive));
      SHOAL_ASSIGN_OR_RETURN(
          left, Node(ExprKind::kBinary, offset, Args(std::move(left), std::move(right)), op));
    }
  }

  // Left-associative levels: additive, then multiplicative, then power.
  Result<ExprPtr> ParseBinary(TokenType level) {
    auto operand = [&]() -> Result<ExprPtr> {
      if (level == TokenType::kAdditive) return ParseBinary(TokenType::kMultiplicative);
      if (level == TokenType::kMultiplicative) return ParseBinary(TokenType::kPower);
      return ParseTest();
    };
    SHOAL_ASSIGN_OR_RETURN(ExprPtr left, operand());
    while (Is(level)) {
      uint32_t offset = Offset();
      std::string op = tokens_[pos_++].value;
      SHOAL_ASSIGN_OR_RETURN(ExprPtr right, operand());
      SHOAL_ASSIGN_OR_RETURN(
          left, Node(ExprKind::kBinary, offset, Args(std::move(left), std::move(right)), op));
    }
    return left;
  }

  Result<ExprPtr> ParseTest() {
    SHOAL_ASSIGN_OR_RETURN(ExprPtr operand, ParseFilter());
    while (IsName("is")) {
      uint32_t offset = Offset();
      ++pos_;
      bool negate = IsName("not");
      if (negate) ++pos_;
      if (!Is(TokenType::kIdentifier)) return Error("expected a test name after 'is'");
      std::string name = tokens_[pos_++].value;
      SHOAL_ASSIGN_OR_RETURN(operand,
                             Node(ExprKind::kTest, offset, Args(std::move(operand)), name));
      operand->negate = negate;
    }
    return operand;
  }

  Result<ExprPtr> ParseFilter() {
    SHOAL_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary());
    while (Is(TokenType::kPipe)) {
      ++pos_;
      uint32_t offset = Offset();
      if (!Is(TokenType::kIdentifier)) return Error("expected a filter name after '|'");
      std::string name = tokens_[pos_++].value;
      SHOAL_ASSIGN_OR_RETURN(ExprPtr filter,
                             Node(ExprKind::kFilter, offset, Args(std::move(operand)), name));
      if (Is(TokenType::kOpenParen)) SHOAL_RETURN_IF_ERROR(ParseArguments(filter.get()));
      operand = std::move(filter);
    }
    return operand;
  }

  Result<ExprPtr> ParseUnary() {
    bool sign = (Is(TokenType::kUnary) || Is(TokenType::kAdditive)) &&
                (tokens_[pos_].value == "-" || tokens_[pos_].value == "+");
    if (!sign) return ParsePostfix();
    Nest nest(this);
    SHOAL_RETURN_IF_ERROR(nest.Check());
    uint32_t offset = Offset();
    std::string op = tokens_[pos_++].value;
    SHOAL_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary());
    return Node(ExprKind::kUnary, offset, Args(std::move(operand)), op);
  }

  // A primary followed by any number of .name, .0, [index], [slice] and (call).
  Result<ExprPtr> ParsePostfix() {
    uint32_t offset = Offset();  // errors point at the start of `a.b[c](d)`
    SHOAL_ASSIGN_OR_RETURN(ExprPtr e, ParsePrimary());
    while (true) {
      if (Is(TokenType::kDot)) {
        ++pos_;
        if (Is(TokenType::kIdentifier)) {
          SHOAL_ASSIGN_OR_RETURN(
              e, Node(ExprKind::kAttribute, offset, Args(std::move(e)), tokens_[pos_++].value));
        } else if (Is(TokenType::kNumber) && tokens_[pos_].value.find('.') == std::string::npos) {
          SHOAL_ASSIGN_OR_RETURN(ExprPtr index, ParsePrimary());
          SHOAL_ASSIGN_OR_RETURN(
              e, Node(ExprKind::kIndex, offset, Args(std::move(e), std::move(index))));
        } else {
          return Error("expected a name or an integer after '.'");
        }
      } else if (Is(TokenType::kOpenBracket)) {
        ++pos_;
        SHOAL_ASSIGN_OR_RETURN(e, ParseSubscript(std::move(e), offset));
      } else if (Is(TokenType::kOpenParen)) {
        SHOAL_ASSIGN_OR_RETURN(e, Node(ExprKind::kCall, offset, Args(std::move(e))));
        SHOAL_RETURN_IF_ERROR(ParseArguments(e.get()));
      } else {
        return e;
      }
    }
  }

  // After `[`: an index, or a slice of up to three parts, then `]`.
  Result<ExprPtr> ParseSubscript(ExprPtr object, uint32_t offset) {
    std::vector<ExprPtr> parts;
    bool slice = false;
    while (!Is(TokenType::kCloseBracket)) {
      if (AtEnd()) return Error("expected ']'");
      if (Is(TokenType::kColon)) {
        parts.push_back(nullptr);
        ++pos_;
        slice = true;
        continue;
      }
      SHOAL_ASSIGN_OR_RETURN(ExprPtr part, ParseExpression());
      parts.push_back(std::move(part));
      if (Is(TokenType::kColon)) {
        ++pos_;
        slice = true;
      }
    }
    ++pos_;  // ]
    if (parts.empty()) return Error("empty subscript");
    if (!slice) {
      if (parts.size() > 1) return Error("expected ']'");
      return Node(ExprKind::kIndex, offset, Args(std::move(object), std::move(parts[0])));
    }
    if (parts.size() > 3) return Error("a slice has at most three parts");
    parts.resize(3);
    parts.insert(parts.begin(), std::move(object));
    return Node(ExprKind::kSlice, offset, std::move(parts));
  }

  // `(a, b, key=c)` into a call's or filter's args and keywords.
  Status ParseArguments(Expr* call) {
    ++pos_;  // (
    while (!Is(TokenType::kCloseParen)) {
      if (AtEnd()) return Error("expected ')'");
      if (Is(TokenType::kMultiplicative) || Is(TokenType::kPower)) {
        return Error("argument unpacking is not supported");
      }
      if (Is(TokenType::kIdentifier) && Is(TokenType::kEquals, 1)) {
        std::string key = tokens_[pos_].value;
        pos_ += 2;
        SHOAL_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        call->height = std::max(call->height, value->height + 1);
        call->keywords.emplace_back(std::move(key), std::move(value));
      } else {
        if (!call->keywords.empty()) return Error("positional argument after a keyword argument");
        SHOAL_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        call->height = std::max(call->height, value->height + 1);
        call->args.push_back(std::move(value));
      }
      if (Is(TokenType::kComma)) ++pos_;
    }
    ++pos_;  // )
    if (call->height > kMaxNesting) {
      return Error("expression nested deeper than " + std::to_string(kMaxNesting));
    }
    return Status::Ok();
  }

  Result<ExprPtr> ParsePrimary() {
    if (AtEnd()) return Error("expected an expression");
    const Token& t = tokens_[pos_];
    uint32_t offset = t.offset;
    switch (t.type) {
      case TokenType::kNumber: {
        ++pos_;
        SHOAL_ASSIGN_OR_RETURN(ExprPtr e, Node(ExprKind::kLiteral, offset, {}));
        if (t.value.find('.') != std::string::npos) {
          e->value = Value::Float(std::strtod(t.value.c_str(), nullptr));
        } else {
          int64_t i = 0;
          auto [end, ec] = std::from_chars(t.value.data() + (t.value[0] == '+'),
                                           t.value.data() + t.value.size(), i);
          if (ec != std::errc()) {
            --pos_;
            return Error("integer out of range");
          }
          e->value = Value::Int(i);
        }
        return e;
      }
      case TokenType::kString: {
        // Adjacent literals concatenate: 'a' "b" is "ab".
        std::string s;
        while (Is(TokenType::kString)) s += tokens_[pos_++].value;
        SHOAL_ASSIGN_OR_RETURN(ExprPtr e, Node(ExprKind::kLiteral, offset, {}));
        e->value = Value::String(std::move(s));
        return e;
      }
      case TokenType::kIdentifier:
        ++pos_;
        return Node(ExprKind::kName, offset, {}, t.value);
      case TokenType::kOpenParen: {
        ++pos_;
        SHOAL_ASSIGN_OR_RETURN(ExprPtr e, ParseSequence(false));
        SHOAL_RETURN_IF_ERROR(Expect(TokenType::kCloseParen, "')'"));
        return e;
      }
      case TokenType::kOpenBracket:
      case TokenType::kOpenBrace: {
        bool dict = t.type == TokenType::kOpenBrace;
        TokenType close = dict ? TokenType::kCloseBrace : TokenType::kCloseBracket;
        ++pos_;
        std::vector<ExprPtr> items;
        while (!Is(close)) {
          if (AtEnd()) return Error(dict ? "expected '}'" : "expected ']'");
          SHOAL_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
          items.push_back(std::move(item));
          if (dict) {
            SHOAL_RETURN_IF_ERROR(Expect(TokenType::kColon, "':'"));
            SHOAL_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
            items.push_back(std::move(value));
          }
          if (Is(TokenType::kComma)) ++pos_;
        }
        ++pos_;
        return Node(dict ? ExprKind::kDict : ExprKind::kList, offset, std::move(items));
      }
      default:
        return Error("expected an expression");
    }
  }

  std::string_view source_;
  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<Program> Parse(std::string_view source, const std::vector<Token>& tokens) {
  return Parser(source, tokens).Run();
}

}  // namespace shoal::native::jinja
