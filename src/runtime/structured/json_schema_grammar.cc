#include "runtime/structured/json_schema_grammar.h"

#include "runtime/structured/gbnf.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace shoal::structured {
namespace {

using Json = nlohmann::ordered_json;  // properties in the order the schema declares them

// The rules every grammar shares. Whitespace as models write it (a space, or
// a newline and an indent), bounded so that a model cannot pad forever;
// digits bounded for the same reason.
constexpr std::string_view kJsonRules = R"(ws ::= ( " " | "\n" [ \t]{0,20} )?
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
boolean ::= "true" | "false"
null ::= "null"
date ::= [0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] )
time ::= ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )
uuid ::= [0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12}
)";

constexpr size_t kMaxRules = 2048;
constexpr int64_t kMaxCount = 256;  // minItems, maxItems, minLength, maxLength (llama.cpp expands repeats)

const std::set<std::string_view> kAnnotations = {"title",   "description", "default", "examples", "$schema",
                                                 "$id",     "$comment",    "$defs",   "definitions",
                                                 "deprecated", "readOnly",  "writeOnly"};
const std::set<std::string_view> kKeywords = {"type",     "properties", "required",  "additionalProperties",
                                              "items",    "minItems",   "maxItems",  "enum",
                                              "const",    "anyOf",      "$ref",      "minLength",
                                              "maxLength", "format"};
const std::set<std::string_view> kTypes = {"object", "array", "string", "number", "integer", "boolean", "null"};

std::string JsonLiteral(const Json& v) { return GbnfLiteral(v.dump(-1, ' ', false, Json::error_handler_t::replace)); }

// Whether `v` is an instance of JSON Schema type `type`.
bool HasType(const Json& v, std::string_view type) {
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  return type == "array" && v.is_array();
}

// A JSON pointer's token, unescaped (~1 is '/', ~0 is '~').
std::string Unescape(std::string_view token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[++i] == '0' ? '~' : '/';
    } else {
      out += token[i];
    }
  }
  return out;
}

// Builds the rules for one schema. Subschemas become expressions inline;
// properties, items, alternatives and references get rules of their own
// (named r<N>, as GBNF names allow letters, digits and dashes only).
class SchemaGrammar {
 public:
  // Rules named `prefix`-r<N>, the schema's own named `prefix`; errors name
  // `field`.
  SchemaGrammar(const Json& root, std::string prefix, std::string field)
      : root_(root), prefix_(std::move(prefix)), field_(std::move(field)) {}

  // The schema's rules, without the shared ones (kJsonRules).
  Result<std::string> Build() {
    SHOAL_ASSIGN_OR_RETURN(std::string root, Expr(root_, ""));
    std::string out = prefix_ + " ::= " + root + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  // Where in the schema, as a JSON pointer ("at /properties/name").
  std::string Where(const std::string& path) const { return field_ + (path.empty() ? "" : " at " + path); }
  Status Refuse(const std::string& path, const std::string& why) const { return InvalidInput(Where(path) + ": " + why); }

  // A rule for `body`, named.
  Result<std::string> Rule(std::string body) {
    if (rules_.size() >= kMaxRules) return InvalidInput(Where("") + ": too large (over " + std::to_string(kMaxRules) + " grammar rules)");
    std::string name = prefix_ + "-r" + std::to_string(rules_.size());
    rules_.emplace_back(name, std::move(body));
    return name;
  }

  Result<std::string> RuleFor(const Json& s, const std::string& path) {
    SHOAL_ASSIGN_OR_RETURN(std::string body, Expr(s, path));
    return Rule(std::move(body));
  }

  Result<std::string> Expr(const Json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) return Refuse(path, "the schema false accepts nothing");
      return std::string("value");
    }
    if (!s.is_object()) return Refuse(path, "a schema is an object or a boolean");
    for (const auto& [key, unused] : s.items()) {
      if (!kKeywords.count(key) && !kAnnotations.count(key)) {
        return Refuse(path, "'" + key + "' is not supported (docs/api.md lists the keywords that are)");
      }
    }
    auto constraints = [&] {
      size_t n = 0;
      for (const auto& [key, unused] : s.items()) n += kKeywords.count(key);
      return n;
    };
    if (auto ref = s.find("$ref"); ref != s.end()) {
      if (constraints() != 1) return Refuse(path, "$ref beside other keywords is not supported");
      return Ref(*ref, path + "/$ref");
    }
    if (auto any = s.find("anyOf"); any != s.end()) {
      if (constraints() != 1) return Refuse(path, "anyOf beside other keywords is not supported");
      if (!any->is_array() || any->empty()) return Refuse(path + "/anyOf", "a non-empty array of schemas");
      std::string alts;
      for (size_t i = 0; i < any->size(); ++i) {
        SHOAL_ASSIGN_OR_RETURN(std::string r, RuleFor((*any)[i], path + "/anyOf/" + std::to_string(i)));
        alts += (i ? " | " : "") + r;
      }
      return "( " + alts + " )";
    }
    SHOAL_ASSIGN_OR_RETURN(std::vector<std::string> types, Types(s, path));
    const auto c = s.find("const"), e = s.find("enum");
    if (c != s.end() || e != s.end()) {
      if (constraints() != 1u + s.contains("type")) return Refuse(path, "enum or const beside keywords other than type is not supported");
      if (c != s.end()) return Values(Json::array({*c}), types, path + "/const");
      if (!e->is_array() || e->empty()) return Refuse(path + "/enum", "a non-empty array");
      return Values(*e, types, path + "/enum");
    }
    if (types.empty()) return std::string("value");
    std::string alts;
    for (const std::string& t : types) {
      std::string one;
      if (t == "object") {
        SHOAL_ASSIGN_OR_RETURN(one, Object(s, path));
      } else if (t == "array") {
        SHOAL_ASSIGN_OR_RETURN(one, Array(s, path));
      } else if (t == "string") {
        SHOAL_ASSIGN_OR_RETURN(one, String(s, path));
      } else {
        one = t;  // number, integer, boolean, null: rules of kJsonRules
      }
      alts += (alts.empty() ? "" : " | ") + one;
    }
    return types.size() == 1 ? alts : "( " + alts + " )";
  }

  // The types `s` allows: its `type`, or, without one, the type its other
  // keywords are about (empty: any value).
  Result<std::vector<std::string>> Types(const Json& s, const std::string& path) {
    std::vector<std::string> types;
    if (auto t = s.find("type"); t != s.end()) {
      const Json list = t->is_array() ? *t : Json::array({*t});
      for (const Json& one : list) {
        if (!one.is_string() || !kTypes.count(one.get<std::string>())) {
          return Refuse(path + "/type", "expected object, array, string, number, integer, boolean or null");
        }
        types.push_back(one.get<std::string>());
      }
      if (types.empty()) return Refuse(path + "/type", "an empty list accepts nothing");
      return types;
    }
    std::set<std::string> implied;
    for (const auto& [key, unused] : s.items()) {
      if (key == "properties" || key == "required" || key == "additionalProperties") implied.insert("object");
      if (key == "items" || key == "minItems" || key == "maxItems") implied.insert("array");
      if (key == "minLength" || key == "maxLength" || key == "format") implied.insert("string");
    }
    if (implied.size() > 1) return Refuse(path, "keywords of several types without a 'type'");
    types.assign(implied.begin(), implied.end());
    return types;
  }

  // enum / const: the values among them of an allowed type.
  Result<std::string> Values(const Json& values, const std::vector<std::string>& types, const std::string& path) {
    std::string alts;
    for (const Json& v : values) {
      bool typed = types.empty();
      for (const std::string& t : types) typed = typed || HasType(v, t);
      if (typed) alts += (alts.empty() ? "" : " | ") + JsonLiteral(v);
    }
    if (alts.empty()) return Refuse(path, "no value has the schema's type");
    return "( " + alts + " )";
  }

  Result<std::string> Ref(const Json& ref, const std::string& path) {
    if (!ref.is_string()) return Refuse(path, "expected a string");
    const std::string target = ref.get<std::string>();
    if (auto done = refs_.find(target); done != refs_.end()) return done->second;
    const Json* s = nullptr;
    if (target == "#") {
      s = &root_;
    } else {
      for (std::string_view prefix : {"#/$defs/", "#/definitions/"}) {
        if (target.rfind(prefix, 0) != 0) continue;
        const std::string container(prefix.substr(2, prefix.size() - 3));
        const std::string name = Unescape(std::string_view(target).substr(prefix.size()));
        auto defs = root_.find(container);
        if (defs != root_.end() && defs->is_object() && defs->contains(name)) s = &(*defs)[name];
      }
    }
    if (!s) return Refuse(path, "'" + target + "' is not a definition of this schema (#, #/$defs/..., #/definitions/...)");
    // Named before it is built, so that a recursive reference finds it.
    SHOAL_ASSIGN_OR_RETURN(std::string name, Rule(""));
    const size_t index = rules_.size() - 1;
    refs_[target] = name;
    SHOAL_ASSIGN_OR_RETURN(rules_[index].second, Expr(*s, target.substr(1)));
    return name;
  }

  Result<int64_t> Count(const Json& s, const char* key, int64_t absent, const std::string& path) {
    auto it = s.find(key);
    if (it == s.end()) return absent;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > static_cast<uint64_t>(kMaxCount)) {
      return Refuse(path + "/" + key, "an integer from 0 to " + std::to_string(kMaxCount));
    }
    return it->get<int64_t>();
  }

  // `item` repeated between `min` and `max` times (max -1: no bound), comma-separated.
  static std::string Repeat(const std::string& item, int64_t min, int64_t max) {
    if (max == 0) return "";
    // The first item, then the rest after commas.
    const int64_t lo = std::max<int64_t>(min - 1, 0), hi = max < 0 ? -1 : max - 1;
    std::string some = item + " ws";
    if (hi != 0) {
      some += " ( \",\" ws " + item + " ws )";
      if (hi < 0) some += lo == 0 ? "*" : "{" + std::to_string(lo) + ",}";
      else some += "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
    }
    return min == 0 ? "( " + some + " )?" : some;
  }

  Result<std::string> Array(const Json& s, const std::string& path) {
    SHOAL_ASSIGN_OR_RETURN(int64_t min, Count(s, "minItems", 0, path));
    SHOAL_ASSIGN_OR_RETURN(int64_t max, Count(s, "maxItems", -1, path));
    if (max >= 0 && min > max) return Refuse(path, "minItems is over maxItems");
    std::string item = "value";
    if (auto it = s.find("items"); it != s.end()) {
      SHOAL_ASSIGN_OR_RETURN(item, RuleFor(*it, path + "/items"));
    }
    return "\"[\" ws " + Repeat(item, min, max) + " \"]\"";
  }

  Result<std::string> String(const Json& s, const std::string& path) {
    SHOAL_ASSIGN_OR_RETURN(int64_t min, Count(s, "minLength", 0, path));
    SHOAL_ASSIGN_OR_RETURN(int64_t max, Count(s, "maxLength", -1, path));
    if (max >= 0 && min > max) return Refuse(path, "minLength is over maxLength");
    if (auto f = s.find("format"); f != s.end()) {
      if (s.contains("minLength") || s.contains("maxLength")) return Refuse(path, "format beside a length is not supported");
      const std::string format = f->is_string() ? f->get<std::string>() : "";
      static const std::map<std::string, std::string> kFormats = {
          {"date", "date"}, {"time", "time"}, {"date-time", "date \"T\" time"}, {"uuid", "uuid"}};
      auto it = kFormats.find(format);
      if (it == kFormats.end()) return Refuse(path + "/format", "'" + f->dump() + "' is not supported (date, time, date-time, uuid)");
      return "\"\\\"\" " + it->second + " \"\\\"\"";
    }
    if (min == 0 && max < 0) return std::string("string");
    const std::string bound = "{" + std::to_string(min) + "," + (max < 0 ? "" : std::to_string(max)) + "}";
    return "\"\\\"\" char" + bound + " \"\\\"\"";
  }

  Result<std::string> Object(const Json& s, const std::string& path) {
    const Json none = Json::object();
    auto p = s.find("properties");
    const Json& props = p == s.end() ? none : *p;
    if (!props.is_object()) return Refuse(path + "/properties", "expected an object");
    std::vector<std::string> names;
    std::set<std::string> required;
    for (const auto& [name, unused] : props.items()) names.push_back(name);
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) return Refuse(path + "/required", "expected an array of names");
      for (const Json& n : *r) {
        if (!n.is_string()) return Refuse(path + "/required", "expected an array of names");
        if (!props.contains(n.get<std::string>())) names.push_back(n.get<std::string>());  // any value
        required.insert(n.get<std::string>());
      }
    }
    const auto extra = s.find("additionalProperties");
    if (names.empty()) {
      if (extra == s.end() || (extra->is_boolean() && extra->get<bool>())) return std::string("object");
      if (extra->is_boolean()) return std::string("\"{\" ws \"}\"");
      // A map: any keys, values of one schema.
      SHOAL_ASSIGN_OR_RETURN(std::string v, RuleFor(*extra, path + "/additionalProperties"));
      return "\"{\" ws ( string ws \":\" ws " + v + " ws ( \",\" ws string ws \":\" ws " + v + " ws )* )? \"}\"";
    }
    if (extra != s.end() && !extra->is_boolean() && !extra->is_object()) {
      return Refuse(path + "/additionalProperties", "expected a boolean or a schema");
    }
    // One rule per property: its key and value.
    std::vector<std::string> kv;
    for (const std::string& name : names) {
      const std::string sub = path + "/properties/" + name;
      std::string value = "value";
      if (props.contains(name)) {
        SHOAL_ASSIGN_OR_RETURN(value, RuleFor(props[name], sub));
      }
      SHOAL_ASSIGN_OR_RETURN(std::string r, Rule(GbnfLiteral(Json(name).dump()) + " ws \":\" ws " + value));
      kv.push_back(std::move(r));
    }
    // In order, required ones always, optional ones maybe: once one is
    // written each later one comes after a comma; before that, an optional
    // one may be skipped.
    const size_t n = names.size();
    std::vector<std::string> after(n + 1);  // properties i.. once one is written
    for (size_t i = n; i-- > 0;) {
      const std::string one = "\",\" ws " + kv[i] + " ws";
      after[i] = (required.count(names[i]) ? " " + one : " ( " + one + " )?") + after[i + 1];
    }
    std::string first;  // properties i.. with none written yet
    for (size_t i = n; i-- > 0;) {
      const std::string here = kv[i] + " ws" + after[i + 1];
      first = required.count(names[i]) ? here : "( " + here + (first.empty() ? " )?" : " | " + first + " )");
    }
    return "\"{\" ws " + first + " \"}\"";
  }

  const Json& root_;
  const std::string prefix_;
  const std::string field_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> refs_;
};

}  // namespace

std::string JsonObjectGrammar() { return "root ::= object\n" + std::string(kJsonRules); }

Result<std::string> JsonSchemaGrammar(std::string_view schema_json) {
  const std::string field = "response_format.json_schema.schema";
  SHOAL_ASSIGN_OR_RETURN(std::string rules, JsonSchemaRules(schema_json, "root", field));
  return rules + JsonRules();
}

Result<std::string> JsonSchemaRules(std::string_view schema_json, const std::string& name, const std::string& field) {
  Json schema = Json::parse(schema_json.begin(), schema_json.end(), nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return InvalidInput(field + ": malformed JSON");
  return SchemaGrammar(schema, name, field).Build();
}

std::string JsonRules() { return std::string(kJsonRules); }

}  // namespace shoal::structured
