#include "runtime/native/chat/jinja_value.h"

#include <cmath>
#include <limits>

#include "runtime/native/chat/jinja_text.h"

namespace shoal::native::jinja {
namespace {

Status TooDeep() {
  return InvalidInput("chat template value nested deeper than " + std::to_string(kMaxNesting));
}

// A float as @huggingface/jinja prints it: integral values keep ".0".
std::string FloatString(double d) {
  if (d == 0 && std::signbit(d)) return "-0.0";
  if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 1e21) return JsNumber(d) + ".0";
  return JsNumber(d);
}

// `undefined_name`: how undefined prints inside a list or dict ("null" for
// tojson, "undefined" when the container itself is printed).
Status AppendJsonAt(const Value& v, int indent, const char* undefined_name, int depth,
                    std::string* out) {
  if (depth > kMaxNesting) return TooDeep();
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      out->append(undefined_name);
      return Status::Ok();
    case Value::Kind::kNone:
      out->append("null");
      return Status::Ok();
    case Value::Kind::kBool:
      out->append(v.AsBool() ? "true" : "false");
      return Status::Ok();
    case Value::Kind::kInt:
      out->append(std::to_string(v.AsInt()));
      return Status::Ok();
    case Value::Kind::kFloat:
      // JSON.stringify writes non-finite numbers as null.
      out->append(std::isfinite(v.AsDouble()) ? JsNumber(v.AsDouble()) : "null");
      return Status::Ok();
    case Value::Kind::kString:
      AppendJsonString(v.AsString(), out);
      return Status::Ok();
    case Value::Kind::kFunction:
      return InvalidInput("cannot convert a function to JSON");
    default:
      break;
  }
  // A list, dict or namespace: one item per line when indenting.
  std::string base_pad, child_pad;
  if (indent > 0) {
    base_pad = "\n" + std::string(static_cast<size_t>(indent) * depth, ' ');
    child_pad = base_pad + std::string(indent, ' ');
  }
  const char* item_separator = indent > 0 ? "," : ", ";
  bool is_list = v.is_list();
  size_t size = is_list ? v.AsList().size() : v.AsObject().size();
  out->push_back(is_list ? '[' : '{');
  for (size_t i = 0; i < size; ++i) {
    if (i > 0) out->append(item_separator);
    out->append(child_pad);
    const Value* item = nullptr;
    if (is_list) {
      item = &v.AsList()[i];
    } else {
      const auto& [key, value] = v.AsObject()[i];
      AppendJsonString(key, out);
      out->append(": ");
      item = &value;
    }
    SHOAL_RETURN_IF_ERROR(AppendJsonAt(*item, indent, undefined_name, depth + 1, out));
  }
  if (size > 0) out->append(base_pad);
  out->push_back(is_list ? ']' : '}');
  return Status::Ok();
}

Result<Value> FromJsonAt(const nlohmann::json& json, int depth) {
  if (depth > kMaxNesting) return TooDeep();
  using Type = nlohmann::json::value_t;
  switch (json.type()) {
    case Type::null:
      return Value::None();
    case Type::boolean:
      return Value::Bool(json.get<bool>());
    case Type::number_integer:
      return Value::Int(json.get<int64_t>());
    case Type::number_unsigned: {
      auto u = json.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Value::Int(static_cast<int64_t>(u));
      }
      return Value::Float(static_cast<double>(u));
    }
    case Type::number_float: {
      double d = json.get<double>();
      // 2^63: the first double past int64.
      if (d == std::trunc(d) && std::fabs(d) < 9223372036854775808.0) {
        return Value::Int(static_cast<int64_t>(d));
      }
      return Value::Float(d);
    }
    case Type::string:
      return Value::String(json.get<std::string>());
    case Type::array: {
      Array items;
      items.reserve(json.size());
      for (const auto& item : json) {
        SHOAL_ASSIGN_OR_RETURN(Value v, FromJsonAt(item, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::List(std::move(items));
    }
    case Type::object: {
      Object entries;
      entries.reserve(json.size());
      for (const auto& [key, item] : json.items()) {
        SHOAL_ASSIGN_OR_RETURN(Value v, FromJsonAt(item, depth + 1));
        entries.emplace_back(key, std::move(v));
      }
      return Value::Dict(std::move(entries));
    }
    default:
      return InvalidInput("chat template variables hold a value that is not JSON");
  }
}

}  // namespace

Value Value::Function(std::string name, Value receiver) {
  return Make<FunctionPtr>(
      std::make_shared<const Callable>(Callable{std::move(name), std::move(receiver)}));
}

double Value::AsDouble() const {
  switch (kind()) {
    case Kind::kBool:
      return AsBool() ? 1 : 0;
    case Kind::kInt:
      return static_cast<double>(AsInt());
    default:
      return std::get<double>(v_);
  }
}

const Object& Value::AsObject() const {
  if (is_dict()) return *std::get<DictPtr>(v_);
  return *std::get<NamespacePtr>(v_);
}

const Value* Value::Find(std::string_view key) const {
  if (!has_attributes()) return nullptr;
  for (const auto& [k, v] : AsObject()) {
    if (k == key) return &v;
  }
  return nullptr;
}

const void* Value::container() const {
  switch (kind()) {
    case Kind::kList:
      return std::get<ListPtr>(v_).get();
    case Kind::kDict:
      return std::get<DictPtr>(v_).get();
    case Kind::kNamespace:
      return std::get<NamespacePtr>(v_).get();
    case Kind::kFunction:
      return std::get<FunctionPtr>(v_).get();
    default:
      return nullptr;
  }
}

const char* KindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kUndefined:
      return "undefined";
    case Value::Kind::kNone:
      return "none";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kNamespace:
      return "namespace";
    case Value::Kind::kFunction:
      return "function";
  }
  return "?";
}

bool Truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.AsBool();
    case Value::Kind::kInt:
      return v.AsInt() != 0;
    case Value::Kind::kFloat:
      return v.AsDouble() != 0 && !std::isnan(v.AsDouble());
    case Value::Kind::kString:
      return !v.AsString().empty();
    case Value::Kind::kList:
      return !v.AsList().empty();
    case Value::Kind::kDict:
      return !v.AsObject().empty();
    case Value::Kind::kNamespace:
    case Value::Kind::kFunction:
      return true;
  }
  return false;
}

namespace {

bool NumberLike(const Value& v) { return v.is_number() || v.kind() == Value::Kind::kBool; }

bool SameNumber(const Value& a, const Value& b) {
  if (a.kind() == Value::Kind::kInt && b.kind() == Value::Kind::kInt) return a.AsInt() == b.AsInt();
  return a.AsDouble() == b.AsDouble();
}

bool SameScalarOrContainer(const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) return a.AsString() == b.AsString();
  if (a.container() != nullptr) return a.container() == b.container();
  return false;
}

}  // namespace

bool LooseEquals(const Value& a, const Value& b) {
  bool a_nothing = a.is_undefined() || a.is_none();
  bool b_nothing = b.is_undefined() || b.is_none();
  if (a_nothing || b_nothing) return a_nothing && b_nothing;
  if (NumberLike(a) && NumberLike(b)) return SameNumber(a, b);
  return SameScalarOrContainer(a, b);
}

bool StrictEquals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return SameNumber(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
      return a.AsBool() == b.AsBool();
    default:
      return SameScalarOrContainer(a, b);
  }
}

Status AppendString(const Value& v, std::string* out) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return Status::Ok();
    case Value::Kind::kFloat:
      out->append(FloatString(v.AsDouble()));
      return Status::Ok();
    case Value::Kind::kString:
      out->append(v.AsString());
      return Status::Ok();
    case Value::Kind::kFunction:
      return InvalidInput("cannot print a function");
    default:
      return AppendJsonAt(v, 0, "undefined", 0, out);
  }
}

Status AppendJson(const Value& v, int indent, std::string* out) {
  return AppendJsonAt(v, indent, "null", 0, out);
}

Result<Value> FromJson(const nlohmann::json& json) { return FromJsonAt(json, 0); }

Budget::~Budget() {
  for (auto& ns : namespaces_) ns->clear();
}

Status Budget::Step() {
  if (++steps_ > kMaxSteps) {
    return InvalidInput("chat template took more than " + std::to_string(kMaxSteps) + " steps");
  }
  return Status::Ok();
}

Status Budget::Charge(size_t bytes) {
  if (bytes > kMaxStringBytes) {
    return InvalidInput("chat template built a value over " +
                        std::to_string(kMaxStringBytes >> 20) + " MiB");
  }
  built_ += bytes;
  if (built_ > kMaxBuiltBytes) {
    return InvalidInput("chat template built more than " + std::to_string(kMaxBuiltBytes >> 20) +
                        " MiB");
  }
  return Status::Ok();
}

Value Budget::NewNamespace(Object attributes) {
  namespaces_.push_back(std::make_shared<Object>(std::move(attributes)));
  return Value::Namespace(namespaces_.back());
}

}  // namespace shoal::native::jinja
