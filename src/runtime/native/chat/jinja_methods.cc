// Attributes, methods and global functions (see jinja_builtins.h).
#include <ctime>
#include <initializer_list>

#include "runtime/native/chat/jinja_builtins.h"
#include "runtime/native/chat/jinja_text.h"

namespace shoal::native::jinja {
namespace {

constexpr std::string_view kStringMethods[] = {"upper",    "lower", "strip",      "lstrip",
                                               "rstrip",   "title", "capitalize", "startswith",
                                               "endswith", "split", "replace"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values"};

template <size_t N>
bool Contains(const std::string_view (&names)[N], std::string_view name) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

Status Bad(const std::string& message) { return InvalidInput(message); }

// ASCII only: templates change the case of role names and keywords.
std::string ChangeCase(std::string_view s, bool upper) {
  std::string out(s);
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// JavaScript's value.replace(/\b\w/g, toUpperCase): the first letter of each
// word goes up, the rest stay as they are.
std::string Title(std::string_view s) {
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    bool starts_word = IsWordChar(out[i]) && (i == 0 || !IsWordChar(out[i - 1]));
    if (starts_word && out[i] >= 'a' && out[i] <= 'z')
      out[i] = static_cast<char>(out[i] - 'a' + 'A');
  }
  return out;
}

// startswith/endswith: a string, or a list (tuple) of strings, any of which matches.
Result<Value> Affix(std::string_view s, const Arguments& args, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  const Value* pattern = args.Get(0, "prefix");
  if (pattern == nullptr) return Bad(std::string(name) + "() needs an argument");
  auto matches = [&](std::string_view p) {
    return s.size() >= p.size() &&
           (prefix ? s.substr(0, p.size()) : s.substr(s.size() - p.size())) == p;
  };
  if (pattern->is_string()) return Value::Bool(matches(pattern->AsString()));
  if (!pattern->is_list())
    return Bad(std::string(name) + "() takes a string or a tuple of strings");
  for (const Value& p : pattern->AsList()) {
    if (!p.is_string()) return Bad(std::string(name) + "() takes a string or a tuple of strings");
    if (matches(p.AsString())) return Value::Bool(true);
  }
  return Value::Bool(false);
}

// Python's str.split(sep=None, maxsplit=-1).
Result<Value> Split(std::string_view s, const Arguments& args) {
  const Value* sep = args.Get(0, "sep");
  const Value* max_arg = args.Get(1, "maxsplit");
  int64_t maxsplit = -1;
  if (max_arg != nullptr) {
    if (max_arg->kind() != Value::Kind::kInt) return Bad("split() maxsplit must be an int");
    maxsplit = max_arg->AsInt();
  }
  auto room = [&](const Array& parts) {
    return maxsplit == -1 || static_cast<int64_t>(parts.size()) < maxsplit;
  };
  Array parts;
  if (sep == nullptr || sep->is_none()) {
    // Runs of non-whitespace; past maxsplit, the rest of the text as is.
    std::string_view text = TrimStart(s);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t start = pos;
      while (pos < text.size() && WhitespaceAt(text, pos) == 0) ++pos;
      if (!room(parts)) {
        parts.push_back(Value::String(std::string(text.substr(start))));
        break;
      }
      parts.push_back(Value::String(std::string(text.substr(start, pos - start))));
      while (size_t n = WhitespaceAt(text, pos)) pos += n;
    }
    return Value::List(std::move(parts));
  }
  if (!sep->is_string()) return Bad("split() separator must be a string or none");
  std::string_view separator = sep->AsString();
  if (separator.empty()) return Bad("split() separator is empty");
  size_t start = 0;
  while (room(parts)) {
    size_t found = s.find(separator, start);
    if (found == std::string_view::npos) break;
    parts.push_back(Value::String(std::string(s.substr(start, found - start))));
    start = found + separator.size();
  }
  parts.push_back(Value::String(std::string(s.substr(start))));
  return Value::List(std::move(parts));
}

// Python's str.replace(old, new, count); an empty `old` matches before every
// character and at the end.
Result<Value> Replace(std::string_view s, const Arguments& args) {
  const Value* from = args.Get(0, "old");
  const Value* to = args.Get(1, "new");
  if (from == nullptr || to == nullptr || !from->is_string() || !to->is_string()) {
    return Bad("replace() takes two strings");
  }
  const Value* count_arg = args.Get(2, "count");
  int64_t remaining = -1;  // no limit
  if (count_arg != nullptr && !count_arg->is_none()) {
    if (count_arg->kind() != Value::Kind::kInt) return Bad("replace() count must be an int");
    remaining = count_arg->AsInt() < 0 ? -1 : count_arg->AsInt();
  }
  const std::string& old_s = from->AsString();
  const std::string& new_s = to->AsString();
  std::string out;
  auto replace_here = [&]() -> Status {
    if (remaining == 0) return Status::Ok();
    if (remaining > 0) --remaining;
    out += new_s;
    if (out.size() > kMaxStringBytes) return Bad("replace() result is too large");
    return Status::Ok();
  };
  if (old_s.empty()) {
    for (std::string_view cp : CodePoints(s)) {
      SHOAL_RETURN_IF_ERROR(replace_here());
      out += cp;
    }
    SHOAL_RETURN_IF_ERROR(replace_here());
    return Value::String(std::move(out));
  }
  size_t start = 0;
  for (size_t found; remaining != 0 && (found = s.find(old_s, start)) != std::string_view::npos;) {
    out += s.substr(start, found - start);
    SHOAL_RETURN_IF_ERROR(replace_here());
    start = found + old_s.size();
  }
  out += s.substr(start);
  return Value::String(std::move(out));
}

Result<Value> StringMethod(const std::string& s, std::string_view name, const Arguments& args) {
  // strip, lstrip and rstrip ignore their argument, as @huggingface/jinja does.
  if (name == "strip") return Value::String(std::string(Trim(s)));
  if (name == "lstrip") return Value::String(std::string(TrimStart(s)));
  if (name == "rstrip") return Value::String(std::string(TrimEnd(s)));
  if (name == "upper" || name == "lower") return Value::String(ChangeCase(s, name == "upper"));
  if (name == "title") return Value::String(Title(s));
  if (name == "capitalize")
    return Value::String(ChangeCase(s.substr(0, 1), true) + s.substr(s.empty() ? 0 : 1));
  if (name == "startswith" || name == "endswith") return Affix(s, args, name == "startswith");
  if (name == "split") return Split(s, args);
  return Replace(s, args);
}

Result<Value> DictMethod(const Value& dict, std::string_view name, const Arguments& args) {
  if (name == "get") {
    const Value* key = args.Get(0, "key");
    if (key == nullptr || !key->is_string()) return Bad("get() takes a string key");
    if (const Value* v = dict.Find(key->AsString())) return *v;
    const Value* fallback = args.Get(1, "default");
    return fallback != nullptr ? *fallback : Value::None();
  }
  Array out;
  for (const auto& [key, value] : dict.AsObject()) {
    if (name == "items") out.push_back(Value::List({Value::String(key), value}));
    if (name == "keys") out.push_back(Value::String(key));
    if (name == "values") out.push_back(value);
  }
  return Value::List(std::move(out));
}

// namespace(dict or [[key, value], ...], key=value, ...)
Result<Value> MakeNamespace(const Arguments& args, Budget& budget) {
  if (args.positional.size() > 1) return Bad("namespace() takes at most one positional argument");
  Object attributes;
  auto set = [&](const std::string& key, const Value& value) {
    for (auto& [k, v] : attributes) {
      if (k == key) {
        v = value;
        return;
      }
    }
    attributes.emplace_back(key, value);
  };
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      for (const auto& [k, v] : source.AsObject()) set(k, v);
    } else if (source.is_list()) {
      for (const Value& pair : source.AsList()) {
        if (!pair.is_list() || pair.AsList().size() != 2 || !pair.AsList()[0].is_string()) {
          return Bad("namespace() takes a dict or a list of [key, value] pairs");
        }
        set(pair.AsList()[0].AsString(), pair.AsList()[1]);
      }
    } else {
      return Bad("namespace() takes a dict or a list of [key, value] pairs");
    }
  }
  for (const auto& [k, v] : args.keywords) set(k, v);
  return budget.NewNamespace(std::move(attributes));
}

// strftime_now(format): the local time with %Y %m %d %H %M %b %B %%, as
// @huggingface/jinja formats it (English month names).
Result<Value> StrftimeNow(const Arguments& args) {
  static constexpr const char* kMonths[] = {"January",   "February", "March",    "April",
                                            "May",       "June",     "July",     "August",
                                            "September", "October",  "November", "December"};
  const Value* format = args.Get(0, "format");
  if (format == nullptr || !format->is_string()) return Bad("strftime_now() takes a format string");
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  auto two = [](int n) { return (n < 10 ? "0" : "") + std::to_string(n); };
  const std::string& f = format->AsString();
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%' || i + 1 == f.size()) {
      out.push_back(f[i]);
      continue;
    }
    char spec = f[++i];
    switch (spec) {
      case 'Y':
        out += std::to_string(tm.tm_year + 1900);
        break;
      case 'm':
        out += two(tm.tm_mon + 1);
        break;
      case 'd':
        out += two(tm.tm_mday);
        break;
      case 'H':
        out += two(tm.tm_hour);
        break;
      case 'M':
        out += two(tm.tm_min);
        break;
      case 'b':
        out += std::string(kMonths[tm.tm_mon]).substr(0, 3);
        break;
      case 'B':
        out += kMonths[tm.tm_mon];
        break;
      case '%':
        out += '%';
        break;
      default:
        out += '%';
        out += spec;
    }
  }
  return Value::String(std::move(out));
}

}  // namespace

const Value* Arguments::Get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keywords) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value GetAttribute(const Value& object, std::string_view name) {
  if (object.has_attributes()) {
    if (const Value* v = object.Find(name)) return *v;
    if (object.is_dict() && Contains(kDictMethods, name))
      return Value::Function(std::string(name), object);
    return Value();
  }
  if (object.is_string()) {
    if (name == "length")
      return Value::Int(static_cast<int64_t>(CodePointCount(object.AsString())));
    if (Contains(kStringMethods, name)) return Value::Function(std::string(name), object);
  }
  if (object.is_list() && name == "length")
    return Value::Int(static_cast<int64_t>(object.AsList().size()));
  return Value();
}

Result<Value> GetItem(const Value& object, const Value& key) {
  if (key.is_string()) return GetAttribute(object, key.AsString());
  bool indexable = object.is_list() || object.is_string();
  if (!indexable || key.kind() != Value::Kind::kInt) {
    return Bad(std::string("cannot index a ") + KindName(object.kind()) + " with a " +
               KindName(key.kind()));
  }
  int64_t i = key.AsInt();
  if (object.is_list()) {
    const Array& items = object.AsList();
    int64_t n = static_cast<int64_t>(items.size());
    if (i < 0) i += n;
    return i >= 0 && i < n ? items[static_cast<size_t>(i)] : Value();
  }
  std::vector<std::string_view> chars = CodePoints(object.AsString());
  int64_t n = static_cast<int64_t>(chars.size());
  if (i < 0) i += n;
  return i >= 0 && i < n ? Value::String(std::string(chars[static_cast<size_t>(i)])) : Value();
}

Value Global(std::string_view name) {
  if (name == "true" || name == "True") return Value::Bool(true);
  if (name == "false" || name == "False") return Value::Bool(false);
  if (name == "none" || name == "None") return Value::None();
  for (std::string_view fn : {"namespace", "raise_exception", "strftime_now"}) {
    if (name == fn) return Value::Function(std::string(name));
  }
  return Value();
}

Result<Value> CallFunction(const Callable& fn, const Arguments& args, Budget& budget) {
  const Value& self = fn.receiver;
  if (self.is_string()) return StringMethod(self.AsString(), fn.name, args);
  if (self.is_dict()) return DictMethod(self, fn.name, args);
  if (fn.name == "namespace") return MakeNamespace(args, budget);
  if (fn.name == "strftime_now") return StrftimeNow(args);
  return Bad("cannot call '" + fn.name + "' here");
}

}  // namespace shoal::native::jinja
