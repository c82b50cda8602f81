// The syntax tree of a parsed chat template: statements holding expressions.
// Built once by the parser, then only read (renders share it across threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/native/chat/jinja_value.h"

namespace shoal::native::jinja {

enum class ExprKind : uint8_t {
  kLiteral,    // value
  kName,       // name
  kList,       // [args...]
  kTuple,      // (args...)
  kDict,       // {args[0]: args[1], args[2]: args[3], ...}
  kAttribute,  // args[0].name
  kIndex,      // args[0][args[1]]
  kSlice,      // args[0][args[1]:args[2]:args[3]], absent parts null
  kCall,       // args[0](args[1...], keywords)
  kFilter,     // args[0] | name(args[1...], keywords)
  kTest,       // args[0] is [not] name
  kUnary,      // name args[0], name one of: not - +
  kBinary,     // args[0] name args[1], name an operator, and/or, in, "not in"
  kTernary,    // args[0] if args[1] else args[2]
  kSelect,     // args[0] if args[1]: undefined when the test fails
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  uint32_t offset = 0;  // in the source, for errors
  std::string name;
  Value value;
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> keywords;
  bool negate = false;  // kTest: `is not`
  int height = 1;       // of this subtree; the parser bounds it (kMaxNesting)
};
using ExprPtr = std::unique_ptr<Expr>;

enum class StmtKind : uint8_t {
  kText,    // text
  kOutput,  // {{ expr }}
  kIf,      // {% if expr %} body {% else %} orelse; elif is an If alone in orelse
  kFor,     // {% for target in expr if condition %} body {% else %} orelse
  kSet,     // {% set target = expr %}
};

struct Stmt {
  StmtKind kind = StmtKind::kText;
  uint32_t offset = 0;
  std::string text;
  ExprPtr target;  // kFor: a name or a tuple of names; kSet: also ns.attr
  ExprPtr expr;
  ExprPtr condition;  // kFor's `if`, or null
  std::vector<Stmt> body, orelse;
};

struct Program {
  std::vector<Stmt> body;
};

}  // namespace shoal::native::jinja
