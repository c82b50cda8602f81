// Filters and tests (see jinja_builtins.h).
#include <charconv>
#include <cmath>

#include "runtime/native/chat/jinja_builtins.h"
#include "runtime/native/chat/jinja_text.h"

namespace shoal::native::jinja {
namespace {

constexpr int kMaxIndent = 64;

Status Bad(std::string_view filter, const Value& operand) {
  return InvalidInput("filter '" + std::string(filter) + "' does not apply to a " +
                      KindName(operand.kind()));
}

Result<Value> ToJson(const Value& operand, const Arguments& args) {
  for (const auto& [key, value] : args.keywords) {
    if (key != "indent") return InvalidInput("tojson() does not support '" + key + "'");
  }
  int indent = 0;
  const Value* indent_arg = args.Get(0, "indent");
  if (indent_arg != nullptr && !indent_arg->is_none()) {
    if (indent_arg->kind() != Value::Kind::kInt || indent_arg->AsInt() < 0 ||
        indent_arg->AsInt() > kMaxIndent) {
      return InvalidInput("tojson() indent must be an int from 0 to " + std::to_string(kMaxIndent));
    }
    indent = static_cast<int>(indent_arg->AsInt());
  }
  std::string out;
  SHOAL_RETURN_IF_ERROR(AppendJson(operand, indent, &out));
  return Value::String(std::move(out));
}

Result<Value> Join(const Value& operand, const Arguments& args) {
  const Value* sep_arg = args.Get(0, "d");
  if (sep_arg != nullptr && !sep_arg->is_string())
    return InvalidInput("join() separator must be a string");
  std::string sep = sep_arg != nullptr ? sep_arg->AsString() : "";
  std::string out;
  auto append = [&](size_t i, auto&& piece) -> Status {
    if (i > 0) out += sep;
    SHOAL_RETURN_IF_ERROR(piece());
    if (out.size() > kMaxStringBytes) return InvalidInput("join() result is too large");
    return Status::Ok();
  };
  if (operand.is_string()) {
    std::vector<std::string_view> chars = CodePoints(operand.AsString());
    for (size_t i = 0; i < chars.size(); ++i) {
      SHOAL_RETURN_IF_ERROR(append(i, [&] {
        out += chars[i];
        return Status::Ok();
      }));
    }
  } else if (operand.is_list()) {
    const Array& items = operand.AsList();
    for (size_t i = 0; i < items.size(); ++i) {
      SHOAL_RETURN_IF_ERROR(append(i, [&] { return AppendString(items[i], &out); }));
    }
  } else {
    return Bad("join", operand);
  }
  return Value::String(std::move(out));
}

// JavaScript's parseInt(s, 10): leading whitespace, a sign, then digits.
Result<Value> ParseInt(const std::string& s, const Value& fallback) {
  std::string_view rest = TrimStart(s);
  bool negative = !rest.empty() && rest[0] == '-';
  if (!rest.empty() && (rest[0] == '-' || rest[0] == '+')) rest.remove_prefix(1);
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), magnitude);
  if (end == rest.data()) return fallback;
  if (ec != std::errc() || magnitude > (uint64_t{1} << 63) - (negative ? 0 : 1)) {
    return InvalidInput("int() of a number out of range");
  }
  return Value::Int(negative ? static_cast<int64_t>(0 - magnitude)
                             : static_cast<int64_t>(magnitude));
}

Result<Value> Int(const Value& operand, const Arguments& args) {
  const Value* fallback = args.Get(0, "default");
  switch (operand.kind()) {
    case Value::Kind::kString:
      return ParseInt(operand.AsString(), fallback ? *fallback : Value::Int(0));
    case Value::Kind::kInt:
      return operand;
    case Value::Kind::kBool:
      return Value::Int(operand.AsBool() ? 1 : 0);
    case Value::Kind::kFloat: {
      double d = std::floor(operand.AsDouble());
      if (!(std::fabs(d) < 9223372036854775808.0))
        return InvalidInput("int() of a float out of range");
      return Value::Int(static_cast<int64_t>(d));
    }
    default:
      return Bad("int", operand);
  }
}

// selectattr(attr[, test[, value]]) and rejectattr: the dicts whose `attr`
// exists and passes the test (truthy without one).
Result<Value> SelectAttr(const Value& operand, const Arguments& args, bool select) {
  const char* name = select ? "selectattr" : "rejectattr";
  if (!operand.is_list()) return Bad(name, operand);
  const Value* attr = args.Get(0, "attribute");
  const Value* test = args.Get(1, "test");
  if (attr == nullptr || !attr->is_string() || (test != nullptr && !test->is_string())) {
    return InvalidInput(std::string(name) + "() takes an attribute name and a test name");
  }
  Value argument = args.positional.size() > 2 ? args.positional[2] : Value();
  Array out;
  for (const Value& item : operand.AsList()) {
    if (!item.has_attributes()) return InvalidInput(std::string(name) + "() needs a list of dicts");
    const Value* v = item.Find(attr->AsString());
    bool passed = false;
    if (v != nullptr && test != nullptr) {
      SHOAL_ASSIGN_OR_RETURN(passed, ApplyTest(test->AsString(), *v, argument));
    } else if (v != nullptr) {
      passed = Truthy(*v);
    }
    if (passed == select) out.push_back(item);
  }
  return Value::List(std::move(out));
}

}  // namespace

Result<Value> ApplyFilter(std::string_view name, const Value& operand, const Arguments& args,
                          Budget& budget) {
  if (name == "tojson") return ToJson(operand, args);
  if (name == "default") {
    const Value* fallback = args.Get(0, "default_value");
    const Value* boolean = args.Get(1, "boolean");
    bool use_fallback = operand.is_undefined() || (boolean && Truthy(*boolean) && !Truthy(operand));
    if (!use_fallback) return operand;
    return fallback ? *fallback : Value::String("");
  }
  if (name == "join") return Join(operand, args);
  if (name == "int") return Int(operand, args);
  if (name == "selectattr" || name == "rejectattr")
    return SelectAttr(operand, args, name == "selectattr");
  if (name == "length") {
    if (operand.is_string())
      return Value::Int(static_cast<int64_t>(CodePointCount(operand.AsString())));
    if (operand.is_list()) return Value::Int(static_cast<int64_t>(operand.AsList().size()));
    if (operand.is_dict()) return Value::Int(static_cast<int64_t>(operand.AsObject().size()));
    return Bad(name, operand);
  }
  if (name == "string") {
    if (operand.is_undefined() || operand.is_none()) return Bad(name, operand);
    std::string out;
    SHOAL_RETURN_IF_ERROR(AppendString(operand, &out));
    return Value::String(std::move(out));
  }
  if (name == "first" || name == "last" || name == "list") {
    if (!operand.is_list()) return Bad(name, operand);
    const Array& items = operand.AsList();
    if (name == "list") return operand;
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  // The rest are methods under another name.
  std::string_view method = name == "trim" ? "strip" : name;
  bool string_filter = name == "trim" || name == "upper" || name == "lower" || name == "title" ||
                       name == "capitalize";
  if (string_filter || name == "items") {
    if (!(string_filter ? operand.is_string() : operand.is_dict())) return Bad(name, operand);
    return CallFunction(Callable{std::string(method), operand}, Arguments{}, budget);
  }
  return InvalidInput("unknown filter '" + std::string(name) + "'");
}

Result<bool> ApplyTest(std::string_view name, const Value& operand, const Value& argument) {
  using K = Value::Kind;
  K k = operand.kind();
  if (name == "defined") return k != K::kUndefined;
  if (name == "undefined") return k == K::kUndefined;
  if (name == "none") return k == K::kNone;
  if (name == "string") return k == K::kString;
  if (name == "number") return operand.is_number();
  if (name == "integer") return k == K::kInt;
  if (name == "boolean") return k == K::kBool;
  if (name == "mapping") return k == K::kDict;
  if (name == "iterable") return k == K::kList || k == K::kString;
  if (name == "sequence") return k == K::kList || k == K::kDict || k == K::kString;
  if (name == "true") return k == K::kBool && operand.AsBool();
  if (name == "false") return k == K::kBool && !operand.AsBool();
  if (name == "equalto" || name == "eq") return StrictEquals(operand, argument);
  return InvalidInput("unknown test '" + std::string(name) + "'");
}

}  // namespace shoal::native::jinja
