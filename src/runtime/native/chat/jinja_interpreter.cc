#include "runtime/native/chat/jinja_interpreter.h"

#include <algorithm>
#include <cmath>

#include "runtime/native/chat/jinja_builtins.h"
#include "runtime/native/chat/jinja_lexer.h"
#include "runtime/native/chat/jinja_text.h"

namespace shoal::native::jinja {
namespace {

// Variables of one level: the globals, a for loop's body. Few names each.
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}

  // The innermost definition, then the built-in globals; undefined if neither.
  Value Lookup(std::string_view name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent_) {
      for (const auto& [k, v] : s->vars_) {
        if (k == name) return v;
      }
    }
    return Global(name);
  }

  void Set(std::string_view name, Value value) {
    for (auto& [k, v] : vars_) {
      if (k == name) {
        v = std::move(value);
        return;
      }
    }
    vars_.emplace_back(std::string(name), std::move(value));
  }

 private:
  const Scope* parent_;
  Object vars_;
};

// The bytes a value built by the template stands for: a string's, a list's
// or dict's slots and the strings directly in them (split's parts).
size_t Footprint(const Value& v) {
  if (v.is_string()) return v.AsString().size();
  size_t bytes = 0;
  if (v.is_list()) {
    for (const Value& item : v.AsList()) {
      bytes += sizeof(Value) + (item.is_string() ? item.AsString().size() : 0);
    }
  } else if (v.is_dict()) {
    for (const auto& [k, item] : v.AsObject()) bytes += sizeof(Value) + k.size();
  }
  return bytes;
}

// Expressions whose value is new (not a variable, literal or part of one).
bool Builds(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kList:
    case ExprKind::kTuple:
    case ExprKind::kDict:
    case ExprKind::kSlice:
    case ExprKind::kCall:
    case ExprKind::kFilter:
      return true;
    case ExprKind::kBinary:
      return e.name != "and" && e.name != "or";
    default:
      return false;
  }
}

// How `~` and string `+` print an operand: like {{ }}, but a float as a
// JavaScript number (2.0 is "2"), as @huggingface/jinja concatenates.
Status AppendOperand(const Value& v, std::string* out) {
  if (v.kind() == Value::Kind::kFloat) {
    out->append(JsNumber(v.AsDouble()));
    return Status::Ok();
  }
  return AppendString(v, out);
}

// Python-style slicing with @huggingface/jinja's bounds; a step of 0 selects nothing.
std::vector<size_t> SliceIndices(int64_t n, const Value* start_v, const Value* stop_v,
                                 const Value* step_v) {
  // A step past either end selects one item, as n + 1 does; clamping keeps
  // `i += step` from overflowing.
  int64_t step = step_v ? std::clamp<int64_t>(step_v->AsInt(), -n - 1, n + 1) : 1;
  int64_t start, stop;
  if (step >= 0) {
    start = start_v ? start_v->AsInt() : 0;
    stop = stop_v ? stop_v->AsInt() : n;
    start = start < 0 ? std::max<int64_t>(n + start, 0) : std::min(start, n);
    stop = stop < 0 ? std::max<int64_t>(n + stop, 0) : std::min(stop, n);
  } else {
    start = start_v ? start_v->AsInt() : n - 1;
    stop = stop_v ? stop_v->AsInt() : -1;
    start = start < 0 ? std::max<int64_t>(n + start, -1) : std::min(start, n - 1);
    stop = stop < -1 ? std::max<int64_t>(n + stop, -1) : std::min(stop, n - 1);
  }
  std::vector<size_t> out;
  if (step > 0) {
    for (int64_t i = start; i < stop; i += step) out.push_back(static_cast<size_t>(i));
  } else if (step < 0) {
    for (int64_t i = start; i > stop; i += step) out.push_back(static_cast<size_t>(i));
  }
  return out;
}

class Interpreter {
 public:
  explicit Interpreter(std::string_view source) : source_(source) {}

  Status Exec(const std::vector<Stmt>& body, Scope& scope, std::string* out) {
    for (const Stmt& s : body) {
      SHOAL_RETURN_IF_ERROR(At(s.offset, budget_.Step()));
      switch (s.kind) {
        case StmtKind::kText:
          SHOAL_RETURN_IF_ERROR(Emit(s.text, s.offset, out));
          break;
        case StmtKind::kOutput: {
          SHOAL_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
          std::string text;
          SHOAL_RETURN_IF_ERROR(At(s.offset, AppendString(v, &text)));
          SHOAL_RETURN_IF_ERROR(Emit(text, s.offset, out));
          break;
        }
        case StmtKind::kIf: {
          SHOAL_ASSIGN_OR_RETURN(Value test, Eval(*s.expr, scope));
          SHOAL_RETURN_IF_ERROR(Exec(Truthy(test) ? s.body : s.orelse, scope, out));
          break;
        }
        case StmtKind::kFor:
          SHOAL_RETURN_IF_ERROR(ExecFor(s, scope, out));
          break;
        case StmtKind::kSet: {
          SHOAL_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, scope));
          SHOAL_RETURN_IF_ERROR(Assign(*s.target, std::move(v), scope));
          break;
        }
      }
    }
    return Status::Ok();
  }

 private:
  // Positions an error that arose at `offset`.
  Status At(uint32_t offset, Status status) const {
    if (status.ok()) return status;
    return Status(status.code(),
                  "chat template " + Where(source_, offset) + ": " + status.message());
  }
  Status Error(uint32_t offset, const std::string& message) const {
    return At(offset, InvalidInput(message));
  }

  Status Emit(std::string_view text, uint32_t offset, std::string* out) {
    SHOAL_RETURN_IF_ERROR(At(offset, budget_.Charge(text.size())));
    if (out->size() + text.size() > kMaxStringBytes) {
      return Error(offset, "the prompt exceeds " + std::to_string(kMaxStringBytes >> 20) + " MiB");
    }
    out->append(text);
    return Status::Ok();
  }

  Status Assign(const Expr& target, Value value, Scope& scope) {
    switch (target.kind) {
      case ExprKind::kName:
        scope.Set(target.name, std::move(value));
        return Status::Ok();
      case ExprKind::kAttribute: {
        SHOAL_ASSIGN_OR_RETURN(Value object, Eval(*target.args[0], scope));
        if (object.kind() != Value::Kind::kNamespace) {
          return Error(target.offset,
                       std::string("cannot set an attribute of a ") + KindName(object.kind()));
        }
        Object& attributes = object.MutableNamespace();
        for (auto& [k, v] : attributes) {
          if (k == target.name) {
            v = std::move(value);
            return Status::Ok();
          }
        }
        attributes.emplace_back(target.name, std::move(value));
        return Status::Ok();
      }
      default: {  // a tuple of names
        if (!value.is_list() || value.AsList().size() != target.args.size()) {
          return Error(target.offset, "cannot unpack " + std::string(KindName(value.kind())) +
                                          " into " + std::to_string(target.args.size()) + " names");
        }
        for (size_t i = 0; i < target.args.size(); ++i) {
          scope.Set(target.args[i]->name, value.AsList()[i]);
        }
        return Status::Ok();
      }
    }
  }

  Status ExecFor(const Stmt& s, Scope& scope, std::string* out) {
    Scope loop_scope(&scope);
    SHOAL_ASSIGN_OR_RETURN(Value iterable, Eval(*s.expr, loop_scope));
    if (iterable.is_dict()) {  // a dict loops over its keys
      Array keys;
      for (const auto& [k, v] : iterable.AsObject()) keys.push_back(Value::String(k));
      iterable = Value::List(std::move(keys));
    }
    if (!iterable.is_list()) {
      return Error(s.expr->offset, std::string("cannot loop over a ") + KindName(iterable.kind()));
    }
    // `for x in xs if cond`: the items that pass, before the loop runs.
    const Array* items = &iterable.AsList();
    Array kept;
    if (s.condition) {
      for (const Value& item : *items) {
        Scope test_scope(&loop_scope);
        SHOAL_RETURN_IF_ERROR(Assign(*s.target, item, test_scope));
        SHOAL_ASSIGN_OR_RETURN(Value keep, Eval(*s.condition, test_scope));
        if (Truthy(keep)) kept.push_back(item);
      }
      items = &kept;
    }
    if (items->empty()) return Exec(s.orelse, loop_scope, out);

    int64_t n = static_cast<int64_t>(items->size());
    for (int64_t i = 0; i < n; ++i) {
      SHOAL_RETURN_IF_ERROR(At(s.offset, budget_.Step()));  // an empty body costs a step too
      const Array& all = *items;
      Object loop = {
          {"index", Value::Int(i + 1)},
          {"index0", Value::Int(i)},
          {"revindex", Value::Int(n - i)},
          {"revindex0", Value::Int(n - i - 1)},
          {"first", Value::Bool(i == 0)},
          {"last", Value::Bool(i == n - 1)},
          {"length", Value::Int(n)},
          {"previtem", i > 0 ? all[i - 1] : Value()},
          {"nextitem", i < n - 1 ? all[i + 1] : Value()},
      };
      loop_scope.Set("loop", Value::Dict(std::move(loop)));
      SHOAL_RETURN_IF_ERROR(Assign(*s.target, all[i], loop_scope));
      SHOAL_RETURN_IF_ERROR(Exec(s.body, loop_scope, out));
    }
    return Status::Ok();
  }

  Result<Value> Eval(const Expr& e, Scope& scope) {
    SHOAL_RETURN_IF_ERROR(At(e.offset, budget_.Step()));
    SHOAL_ASSIGN_OR_RETURN(Value v, EvalNode(e, scope));
    // What the template builds counts against its budget; what it reads does not.
    if (Builds(e)) SHOAL_RETURN_IF_ERROR(At(e.offset, budget_.Charge(Footprint(v))));
    return v;
  }

  Result<Value> EvalNode(const Expr& e, Scope& scope) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.value;
      case ExprKind::kName:
        return scope.Lookup(e.name);
      case ExprKind::kList:
      case ExprKind::kTuple: {
        Array items;
        for (const auto& a : e.args) {
          SHOAL_ASSIGN_OR_RETURN(Value v, Eval(*a, scope));
          items.push_back(std::move(v));
        }
        return Value::List(std::move(items));
      }
      case ExprKind::kDict:
        return EvalDict(e, scope);
      case ExprKind::kAttribute: {
        SHOAL_ASSIGN_OR_RETURN(Value object, Eval(*e.args[0], scope));
        return GetAttribute(object, e.name);
      }
      case ExprKind::kIndex: {
        SHOAL_ASSIGN_OR_RETURN(Value object, Eval(*e.args[0], scope));
        SHOAL_ASSIGN_OR_RETURN(Value key, Eval(*e.args[1], scope));
        return Located(e.offset, GetItem(object, key));
      }
      case ExprKind::kSlice:
        return EvalSlice(e, scope);
      case ExprKind::kCall:
        return EvalCall(e, scope);
      case ExprKind::kFilter: {
        SHOAL_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0], scope));
        SHOAL_ASSIGN_OR_RETURN(Arguments args, EvalArguments(e, scope));
        return Located(e.offset, ApplyFilter(e.name, operand, args, budget_));
      }
      case ExprKind::kTest: {
        SHOAL_ASSIGN_OR_RETURN(Value operand, Eval(*e.args[0], scope));
        SHOAL_ASSIGN_OR_RETURN(bool passed, Located(e.offset, ApplyTest(e.name, operand)));
        return Value::Bool(passed != e.negate);
      }
      case ExprKind::kUnary:
        return EvalUnary(e, scope);
      case ExprKind::kBinary: {
        SHOAL_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0], scope));
        // and/or yield an operand, evaluating the right one only when needed.
        if (e.name == "and") return Truthy(left) ? Eval(*e.args[1], scope) : Result<Value>(left);
        if (e.name == "or") return Truthy(left) ? Result<Value>(left) : Eval(*e.args[1], scope);
        SHOAL_ASSIGN_OR_RETURN(Value right, Eval(*e.args[1], scope));
        return Located(e.offset, Binary(e.name, left, right));
      }
      case ExprKind::kTernary: {
        SHOAL_ASSIGN_OR_RETURN(Value test, Eval(*e.args[1], scope));
        return Eval(*e.args[Truthy(test) ? 0 : 2], scope);
      }
      case ExprKind::kSelect: {
        SHOAL_ASSIGN_OR_RETURN(Value test, Eval(*e.args[1], scope));
        return Truthy(test) ? Eval(*e.args[0], scope) : Result<Value>(Value());
      }
    }
    return Error(e.offset, "unknown expression");
  }

  template <class T>
  Result<T> Located(uint32_t offset, Result<T> r) const {
    if (r.ok()) return r;
    return At(offset, r.status());
  }

  Result<Value> EvalDict(const Expr& e, Scope& scope) {
    Object entries;
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      SHOAL_ASSIGN_OR_RETURN(Value key, Eval(*e.args[i], scope));
      if (!key.is_string()) return Error(e.args[i]->offset, "dict keys must be strings");
      SHOAL_ASSIGN_OR_RETURN(Value value, Eval(*e.args[i + 1], scope));
      bool replaced = false;
      for (auto& [k, v] : entries) {
        if (k == key.AsString()) {
          v = value;
          replaced = true;
        }
      }
      if (!replaced) entries.emplace_back(key.AsString(), std::move(value));
    }
    return Value::Dict(std::move(entries));
  }

  Result<Value> EvalSlice(const Expr& e, Scope& scope) {
    SHOAL_ASSIGN_OR_RETURN(Value object, Eval(*e.args[0], scope));
    if (!object.is_list() && !object.is_string()) {
      return Error(e.offset, std::string("cannot slice a ") + KindName(object.kind()));
    }
    Value bounds[3];
    for (int i = 0; i < 3; ++i) {
      if (!e.args[i + 1]) continue;
      SHOAL_ASSIGN_OR_RETURN(bounds[i], Eval(*e.args[i + 1], scope));
      if (!bounds[i].is_undefined() && bounds[i].kind() != Value::Kind::kInt) {
        return Error(e.args[i + 1]->offset, "slice bounds must be ints");
      }
    }
    auto part = [&](int i) { return bounds[i].is_undefined() ? nullptr : &bounds[i]; };
    if (object.is_list()) {
      const Array& items = object.AsList();
      Array out;
      for (size_t i : SliceIndices(static_cast<int64_t>(items.size()), part(0), part(1), part(2))) {
        out.push_back(items[i]);
      }
      return Value::List(std::move(out));
    }
    std::vector<std::string_view> chars = CodePoints(object.AsString());
    std::string out;
    for (size_t i : SliceIndices(static_cast<int64_t>(chars.size()), part(0), part(1), part(2))) {
      out += chars[i];
    }
    return Value::String(std::move(out));
  }

  Result<Arguments> EvalArguments(const Expr& e, Scope& scope) {
    Arguments args;
    for (size_t i = 1; i < e.args.size(); ++i) {
      SHOAL_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i], scope));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [key, expr] : e.keywords) {
      SHOAL_ASSIGN_OR_RETURN(Value v, Eval(*expr, scope));
      args.keywords.emplace_back(key, std::move(v));
    }
    return args;
  }

  Result<Value> EvalCall(const Expr& e, Scope& scope) {
    SHOAL_ASSIGN_OR_RETURN(Arguments args, EvalArguments(e, scope));
    SHOAL_ASSIGN_OR_RETURN(Value callee, Eval(*e.args[0], scope));
    if (callee.kind() != Value::Kind::kFunction) {
      return Error(e.offset, std::string("cannot call a ") + KindName(callee.kind()));
    }
    const Callable& fn = callee.AsFunction();
    // The template's own error: its message is the whole error.
    if (fn.name == "raise_exception" && fn.receiver.is_undefined()) {
      std::string message;
      if (!args.positional.empty()) {
        SHOAL_RETURN_IF_ERROR(AppendString(args.positional[0], &message));
      }
      return InvalidInput(message);
    }
    return Located(e.offset, CallFunction(fn, args, budget_));
  }

  Result<Value> EvalUnary(const Expr& e, Scope& scope) {
    SHOAL_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0], scope));
    if (e.name == "not") return Value::Bool(!Truthy(v));
    int sign = e.name == "-" ? -1 : 1;
    switch (v.kind()) {
      case Value::Kind::kInt:
        if (v.AsInt() == INT64_MIN && sign < 0) return Value::Float(-v.AsDouble());
        return Value::Int(sign * v.AsInt());
      case Value::Kind::kBool:
        return Value::Int(sign * (v.AsBool() ? 1 : 0));
      case Value::Kind::kFloat:
        return Value::Float(sign * v.AsDouble());
      default:
        return Error(e.offset, "unary " + e.name + " does not apply to a " + KindName(v.kind()));
    }
  }

  Result<Value> Binary(const std::string& op, const Value& left, const Value& right) {
    if (op == "==") return Value::Bool(LooseEquals(left, right));
    if (op == "!=") return Value::Bool(!LooseEquals(left, right));
    bool membership = op == "in" || op == "not in";
    if (left.is_undefined() || right.is_undefined()) {
      if (right.is_undefined() && membership) return Value::Bool(op == "not in");
      return InvalidInput("cannot use '" + op + "' with undefined");
    }
    if (left.is_none() || right.is_none()) return InvalidInput("cannot use '" + op + "' with none");
    if (op == "~") return Concatenate(left, right);
    if (left.is_number() && right.is_number() && !membership) return Arithmetic(op, left, right);
    if (op == "**" && (left.kind() == Value::Kind::kBool || right.kind() == Value::Kind::kBool)) {
      return Arithmetic(op, Value::Float(left.AsDouble()), Value::Float(right.AsDouble()));
    }
    if (op == "+" && left.is_list() && right.is_list()) {
      Array items = left.AsList();
      items.insert(items.end(), right.AsList().begin(), right.AsList().end());
      return Value::List(std::move(items));
    }
    if (membership) {
      bool found = false;
      if (right.is_list()) {
        for (const Value& item : right.AsList()) found = found || StrictEquals(item, left);
      } else if (left.is_string() && right.is_string()) {
        found = right.AsString().find(left.AsString()) != std::string::npos;
      } else if (left.is_string() && right.is_dict()) {
        found = right.Find(left.AsString()) != nullptr;
      } else {
        return InvalidInput("cannot use '" + op + "' with a " + KindName(right.kind()));
      }
      return Value::Bool(found != (op == "not in"));
    }
    if (op == "+" && (left.is_string() || right.is_string())) return Concatenate(left, right);
    return InvalidInput("cannot use '" + op + "' with a " + KindName(left.kind()) + " and a " +
                        KindName(right.kind()));
  }

  static Result<Value> Concatenate(const Value& left, const Value& right) {
    std::string out;
    SHOAL_RETURN_IF_ERROR(AppendOperand(left, &out));
    SHOAL_RETURN_IF_ERROR(AppendOperand(right, &out));
    return Value::String(std::move(out));
  }

  // Ints stay ints unless they overflow; a float operand or `/` gives a float.
  static Result<Value> Arithmetic(const std::string& op, const Value& left, const Value& right) {
    bool ints = left.kind() == Value::Kind::kInt && right.kind() == Value::Kind::kInt;
    double a = left.AsDouble(), b = right.AsDouble();
    if (op == "<") return Value::Bool(ints ? left.AsInt() < right.AsInt() : a < b);
    if (op == ">") return Value::Bool(ints ? left.AsInt() > right.AsInt() : a > b);
    if (op == "<=") return Value::Bool(ints ? left.AsInt() <= right.AsInt() : a <= b);
    if (op == ">=") return Value::Bool(ints ? left.AsInt() >= right.AsInt() : a >= b);
    if (op == "/") return Value::Float(a / b);
    if (ints) {
      int64_t x = left.AsInt(), y = right.AsInt(), r = 0;
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
      if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
      if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
      if (op == "//" || op == "%") {
        if (y == 0) return InvalidInput("integer division by zero");
        if (x == INT64_MIN && y == -1) return op == "//" ? Value::Float(-a) : Value::Int(0);
        r = op == "%" ? x % y : x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
      }
      if (op == "**") {
        if (y < 0) return Value::Float(std::pow(a, b));
        // Square-and-multiply; any overflow falls back to a float.
        r = 1;
        for (int64_t base = x, e = y; e > 0 && !overflow; e >>= 1) {
          if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
          if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
        }
      }
      if (!overflow) return Value::Int(r);
    }
    double r = 0;
    if (op == "+") r = a + b;
    if (op == "-") r = a - b;
    if (op == "*") r = a * b;
    if (op == "//") r = std::floor(a / b);
    if (op == "%") r = std::fmod(a, b);
    if (op == "**") {
      if (a == 0 && b < 0) return InvalidInput("0 cannot be raised to a negative power");
      r = std::pow(a, b);
      if (!std::isfinite(r)) return InvalidInput("a power that is not a finite number");
    }
    return Value::Float(r);
  }

  std::string_view source_;
  Budget budget_;
};

}  // namespace

Result<std::string> Render(std::string_view source, const Program& program,
                           const Value& variables) {
  Scope globals(nullptr);
  for (const auto& [name, value] : variables.AsObject()) globals.Set(name, value);
  Interpreter interpreter(source);
  std::string out;
  SHOAL_RETURN_IF_ERROR(interpreter.Exec(program.body, globals, &out));
  return out;
}

}  // namespace shoal::native::jinja
