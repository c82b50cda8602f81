// Values of the chat-template interpreter, and what one render may spend.
//
// A Value is small and cheap to copy: strings, lists and dicts are shared and
// immutable once built, so a value read from the variables or a literal of
// the template is never copied. Namespaces (namespace()) are the one mutable
// kind: `{% set ns.x = ... %}` changes the object every copy refers to.
//
// Comparison, truthiness and printing follow @huggingface/jinja (see
// chat_template.h): `==` on lists and dicts is identity, booleans print as
// "true"/"false", lists and dicts print as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/status.h"

namespace shoal::native::jinja {

// The limits of chat_template.h.
inline constexpr int kMaxNesting = 256;               // template syntax and JSON variables
inline constexpr size_t kMaxStringBytes = 16u << 20;  // any one string, the prompt included
inline constexpr size_t kMaxBuiltBytes = 256u << 20;  // all strings and lists built by one render
inline constexpr uint64_t kMaxSteps = 10'000'000;     // evaluation steps of one render

class Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion order, few keys
struct Callable;

class Value {
 public:
  // In the order of the alternatives of `v_`.
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kFunction
  };

  Value() = default;  // undefined
  static Value None() { return Make<std::nullptr_t>(nullptr); }
  static Value Bool(bool b) { return Make<bool>(b); }
  static Value Int(int64_t i) { return Make<int64_t>(i); }
  static Value Float(double d) { return Make<double>(d); }
  static Value String(std::string s) {
    return Make<StringPtr>(std::make_shared<const std::string>(std::move(s)));
  }
  static Value List(Array items) {
    return Make<ListPtr>(std::make_shared<const Array>(std::move(items)));
  }
  static Value Dict(Object entries) {
    return Make<DictPtr>(std::make_shared<const Object>(std::move(entries)));
  }
  static Value Namespace(std::shared_ptr<Object> attributes) {
    return Make<NamespacePtr>(std::move(attributes));
  }
  // A global function (receiver undefined) or a method bound to `receiver`.
  static Value Function(std::string name, Value receiver = Value());

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  // int or float (not bool)
  bool is_number() const { return kind() == Kind::kInt || kind() == Kind::kFloat; }
  // dict or namespace: what has attributes
  bool has_attributes() const { return is_dict() || kind() == Kind::kNamespace; }

  bool AsBool() const { return std::get<bool>(v_); }
  int64_t AsInt() const { return std::get<int64_t>(v_); }
  double AsDouble() const;  // of an int, float or bool
  const std::string& AsString() const { return *std::get<StringPtr>(v_); }
  const Array& AsList() const { return *std::get<ListPtr>(v_); }
  const Object& AsObject() const;  // dict or namespace
  Object& MutableNamespace() const { return *std::get<NamespacePtr>(v_); }
  const Callable& AsFunction() const { return *std::get<FunctionPtr>(v_); }

  // The entry `key` of a dict or namespace, or null.
  const Value* Find(std::string_view key) const;
  // What a list, dict or namespace is, for identity comparison.
  const void* container() const;

 private:
  using StringPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const Array>;
  using DictPtr = std::shared_ptr<const Object>;
  using NamespacePtr = std::shared_ptr<Object>;
  using FunctionPtr = std::shared_ptr<const Callable>;

  template <class T, class Arg>
  static Value Make(Arg&& arg) {
    Value v;
    v.v_.emplace<T>(std::forward<Arg>(arg));
    return v;
  }

  std::variant<std::monostate, std::nullptr_t, bool, int64_t, double, StringPtr, ListPtr, DictPtr,
               NamespacePtr, FunctionPtr>
      v_;
};

struct Callable {
  std::string name;
  Value receiver;
};

// "str", "list", ...: for error messages.
const char* KindName(Value::Kind kind);

// Python truthiness: empty strings, lists and dicts, 0, none and undefined are false.
bool Truthy(const Value& v);

// `==`: numbers (bools counting as 0 and 1) by value, strings by content,
// none equals undefined, lists/dicts/namespaces by identity.
bool LooseEquals(const Value& a, const Value& b);
// `in` on a list and the `equalto` test: like LooseEquals but a bool is no
// number and none is not undefined.
bool StrictEquals(const Value& a, const Value& b);

// How `{{ v }}` prints it: a string as is, true/false, numbers as JavaScript
// does (a float that is integral keeps ".0"), lists and dicts as JSON.
// Undefined and none print nothing.
Status AppendString(const Value& v, std::string* out);

// `tojson`: JSON with @huggingface/jinja's spacing (", " and ": ", or with
// `indent` > 0 one item per line); undefined becomes null.
Status AppendJson(const Value& v, int indent, std::string* out);

// A JSON variable as a Value; objects keep nlohmann's (sorted) key order, and
// an integral float becomes an int, as JSON.parse in JavaScript makes it.
Result<Value> FromJson(const nlohmann::json& json);

// What one render may spend (the limits above), and the namespaces it made:
// they are cleared when the render ends, since `{% set ns.self = ns %}`
// would otherwise keep itself alive.
class Budget {
 public:
  Budget() = default;
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;
  ~Budget();

  Status Step();
  // A string or list of `bytes` is being built.
  Status Charge(size_t bytes);
  Value NewNamespace(Object attributes);

 private:
  uint64_t steps_ = 0;
  size_t built_ = 0;
  std::vector<std::shared_ptr<Object>> namespaces_;
};

}  // namespace shoal::native::jinja
