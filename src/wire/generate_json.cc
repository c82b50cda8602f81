#include "wire/generate_json.h"

#include <cmath>
#include <limits>

#include "wire/json_writer.h"
#include "wire/request_json.h"

namespace shoal::wire::gen {
namespace {

std::string_view TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an invalid value";
  }
}

// A float as the client wrote it: 0.1, not 0.10000000149011612.
std::string Num(float v) {
  std::string s;
  JsonWriter(&s).Float(v);
  return s;
}

std::string Indexed(std::string_view field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

// How deep `v` nests, counting up to `limit` (and no further: the walk is
// recursive, so it must stop early on a hostile document).
size_t Depth(const Json& v, size_t limit) {
  if (limit == 0 || !v.is_structured()) return 0;
  size_t deepest = 0;
  for (const auto& child : v) deepest = std::max(deepest, Depth(child, limit - 1));
  return deepest + 1;
}

constexpr size_t kMaxObjectDepth = 32;

// An image part's image_url: {"url": "data:...;base64,...", "detail": "auto"}
// → the image's bytes. Shoal fetches nothing: only data: URLs.
Status ReadImageUrl(const Json& v, const std::string& field, std::string* bytes) {
  if (!v.is_object()) return Expected(field, "an object {\"url\": ...}", v);
  for (const auto& [key, value] : v.items()) {
    if (key != "url" && key != "detail") return InvalidInput(field + "." + key + ": not supported (url, detail)");
  }
  if (auto detail = v.find("detail"); detail != v.end() && !detail->is_null() && *detail != "auto") {
    return InvalidInput(field + ".detail: only \"auto\" (the model's own input size)");
  }
  auto url = v.find("url");
  if (url == v.end()) return InvalidInput(field + ".url: missing");
  std::string text;
  SHOAL_RETURN_IF_ERROR(ReadString(*url, field + ".url", &text));
  if (text.rfind("data:", 0) != 0) {
    return InvalidInput(field + ".url: only data: URLs (Shoal fetches nothing; send the image inline)");
  }
  return DecodeJsonImage(field + ".url", text, bytes);
}

// A message's content: a string, null, or OpenAI's array of text and
// image_url parts. Text parts are joined by newlines (as vLLM joins them)
// into content; a message with an image keeps every part in order too.
Status ReadContent(const Json& v, std::string_view field, ChatMessage* msg) {
  if (v.is_null()) {  // an assistant message that only called tools
    msg->content.clear();
    return Status::Ok();
  }
  if (v.is_string()) return ReadString(v, field, &msg->content);
  if (!v.is_array()) return Expected(field, "a string or an array of content parts", v);
  msg->content.clear();
  std::vector<ContentPart> parts;
  bool images = false, texts = false;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string part = Indexed(field, i);
    const Json& p = v[i];
    if (!p.is_object()) return Expected(part, "an object", p);
    auto type = p.find("type");
    if (type == p.end()) return InvalidInput(part + ".type: missing");
    std::string t;
    SHOAL_RETURN_IF_ERROR(ReadString(*type, part + ".type", &t));
    const char* payload = t == "text" ? "text" : t == "image_url" ? "image_url" : nullptr;
    if (!payload) return InvalidInput(part + ".type: '" + t + "' is not supported (text, image_url)");
    for (const auto& [key, value] : p.items()) {
      if (key != "type" && key != payload) return InvalidInput(part + "." + key + ": not supported in a " + t + " part");
    }
    auto body = p.find(payload);
    if (body == p.end()) return InvalidInput(part + "." + payload + ": missing");
    ContentPart& c = parts.emplace_back();
    if (t == "image_url") {
      c.image = images = true;
      SHOAL_RETURN_IF_ERROR(ReadImageUrl(*body, part + ".image_url", &c.data));
      continue;
    }
    SHOAL_RETURN_IF_ERROR(ReadString(*body, part + ".text", &c.data));
    if (texts) msg->content.push_back('\n');
    msg->content.append(c.data);
    texts = true;
  }
  if (images) msg->parts = std::move(parts);
  return Status::Ok();
}

// Reads a document only to hear why it is malformed: nlohmann's SAX parser
// hands the error over instead of throwing it.
struct ParseErrorSax {
  std::string error;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(Json::number_integer_t) { return true; }
  bool number_unsigned(Json::number_unsigned_t) { return true; }
  bool number_float(Json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(Json::binary_t&) { return true; }
  bool start_object(std::size_t) { return true; }
  bool key(std::string&) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error = e.what();
    return false;
  }
};

// "parse error at line 1, column 25: syntax error while parsing value -
// invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF".
std::string WhyMalformed(std::string_view text) {
  ParseErrorSax sax;
  Json::sax_parse(text.begin(), text.end(), &sax);
  std::string why = sax.error;
  if (auto bracket = why.find("] "); bracket != std::string::npos) why.erase(0, bracket + 2);  // [json.exception...]
  return why.empty() ? "unreadable" : why;
}

// The roles OpenAI's chat API defines; a template would render any other.
Status CheckRole(const std::string& role, const std::string& field) {
  if (role.empty()) return InvalidInput(field + ": must not be empty");
  static constexpr std::string_view kRoles[] = {"system", "developer", "user", "assistant", "tool"};
  for (std::string_view r : kRoles) {
    if (role == r) return Status::Ok();
  }
  size_t cut = std::min<size_t>(role.size(), 32);
  while (cut < role.size() && cut > 0 && (static_cast<unsigned char>(role[cut]) & 0xC0) == 0x80) --cut;
  const std::string shown = cut < role.size() ? role.substr(0, cut) + "..." : role;
  return InvalidInput(field + ": '" + shown + "' is not a role (system, developer, user, assistant or tool)");
}

}  // namespace

Status ParseObject(std::string_view text, std::string_view what, Json* out) {
  if (text.empty()) return InvalidInput(std::string(what) + ": empty");
  try {
    *out = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  } catch (...) {  // allow_exceptions covers parse errors; nothing else should throw
    *out = Json(Json::value_t::discarded);
  }
  if (out->is_discarded()) return InvalidInput(std::string(what) + ": malformed JSON (" + WhyMalformed(text) + ")");
  if (!out->is_object()) return InvalidInput(std::string(what) + ": expected a JSON object");
  return Status::Ok();
}

Status Expected(std::string_view field, std::string_view want, const Json& v) {
  return InvalidInput(std::string(field) + ": expected " + std::string(want) + ", got " +
                      std::string(TypeName(v)));
}

Status ReadString(const Json& v, std::string_view field, std::string* out) {
  if (!v.is_string()) return Expected(field, "a string", v);
  *out = v.get_ref<const std::string&>();
  return Status::Ok();
}

Status ReadBool(const Json& v, std::string_view field, bool* out) {
  if (!v.is_boolean()) return Expected(field, "a boolean", v);
  *out = v.get<bool>();
  return Status::Ok();
}

Status ReadNumber(const Json& v, std::string_view field, double* out) {
  if (!v.is_number()) return Expected(field, "a number", v);
  *out = v.get<double>();
  return Status::Ok();
}

Status ReadInt(const Json& v, std::string_view field, int64_t lo, int64_t hi, int64_t* out) {
  const std::string f(field);
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) {
      return InvalidInput(f + ": must be at most " + std::to_string(hi) + ", got " +
                          std::to_string(u));
    }
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    // 16.0 is 16 (some clients only have doubles); 1.5 is not an integer.
    const double d = v.get<double>();
    if (!(d == std::floor(d)) || std::fabs(d) > 9e15) return Expected(field, "an integer", v);
    x = static_cast<int64_t>(d);
  } else {
    return Expected(field, "an integer", v);
  }
  if (x < lo)
    return InvalidInput(f + ": must be at least " + std::to_string(lo) + ", got " +
                        std::to_string(x));
  if (x > hi)
    return InvalidInput(f + ": must be at most " + std::to_string(hi) + ", got " +
                        std::to_string(x));
  *out = x;
  return Status::Ok();
}

Status ReadSeed(const Json& v, std::string_view field, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return Status::Ok();
  }
  int64_t x = 0;
  SHOAL_RETURN_IF_ERROR(ReadInt(v, field, std::numeric_limits<int64_t>::min(),
                                std::numeric_limits<int64_t>::max(), &x));
  *out = static_cast<uint64_t>(x);
  return Status::Ok();
}

Status ReadStop(const Json& v, std::string_view field, std::vector<std::string>* out) {
  out->clear();
  if (v.is_string()) {
    out->push_back(v.get<std::string>());
    return Status::Ok();
  }
  if (!v.is_array()) return Expected(field, "a string or an array of strings", v);
  for (size_t i = 0; i < v.size(); ++i) {
    std::string s;
    SHOAL_RETURN_IF_ERROR(ReadString(v[i], Indexed(field, i), &s));
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

Status ReadTokenIds(const Json& v, std::string_view field, std::vector<int32_t>* out) {
  if (!v.is_array()) return Expected(field, "an array of token ids", v);
  out->clear();
  out->reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t id = 0;
    SHOAL_RETURN_IF_ERROR(
        ReadInt(v[i], Indexed(field, i), 0, std::numeric_limits<int32_t>::max(), &id));
    out->push_back(static_cast<int32_t>(id));
  }
  return Status::Ok();
}

Status ReadObjectText(const Json& v, std::string_view field, std::string* out) {
  if (!v.is_object()) return Expected(field, "an object", v);
  if (Depth(v, kMaxObjectDepth + 1) > kMaxObjectDepth) {
    return InvalidInput(std::string(field) + ": nested deeper than " +
                        std::to_string(kMaxObjectDepth) + " levels");
  }
  *out = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  return Status::Ok();
}

Status ReadResponseFormat(const Json& v, bool native, ResponseFormat* out) {
  *out = ResponseFormat{};
  if (!v.is_object()) return Expected("response_format", "an object", v);
  std::string type;
  auto t = v.find("type");
  if (t == v.end()) return InvalidInput("response_format.type: missing");
  SHOAL_RETURN_IF_ERROR(ReadString(*t, "response_format.type", &type));
  const bool native_type = native && (type == "regex" || type == "choice");
  // The one field each type takes besides "type".
  const std::string_view own = type == "json_schema" ? "json_schema"
                               : type == "regex"     ? "pattern"
                               : type == "choice"    ? "choices"
                                                     : "";
  for (const auto& [key, value] : v.items()) {
    if (key != "type" && key != own) {
      return InvalidInput("response_format." + key + ": not a field of a '" + type + "' format");
    }
  }
  if (type == "text") return Status::Ok();
  if (type == "json_object") {
    out->type = ResponseFormat::Type::kJsonObject;
    return Status::Ok();
  }
  if (native_type) {
    auto it = v.find(own);
    if (it == v.end()) return InvalidInput("response_format." + std::string(own) + ": missing");
    if (type == "regex") {
      out->type = ResponseFormat::Type::kRegex;
      return ReadString(*it, "response_format.pattern", &out->pattern);
    }
    out->type = ResponseFormat::Type::kChoice;
    if (!it->is_array()) return Expected("response_format.choices", "an array of strings", *it);
    for (size_t i = 0; i < it->size(); ++i) {
      std::string c;
      SHOAL_RETURN_IF_ERROR(ReadString((*it)[i], "response_format.choices[" + std::to_string(i) + "]", &c));
      out->choices.push_back(std::move(c));
    }
    return Status::Ok();
  }
  if (type != "json_schema") {
    return InvalidInput("response_format.type: '" + type + "' is not one of text, json_object, json_schema" +
                        (native ? ", regex, choice" : ""));
  }
  out->type = ResponseFormat::Type::kJsonSchema;
  auto js = v.find("json_schema");
  if (js == v.end()) return InvalidInput("response_format.json_schema: missing");
  if (!js->is_object()) return Expected("response_format.json_schema", "an object", *js);
  bool has_schema = false;
  for (const auto& [key, value] : js->items()) {
    const std::string field = "response_format.json_schema." + key;
    if (key == "name") {
      SHOAL_RETURN_IF_ERROR(ReadString(value, field, &out->name));
    } else if (key == "schema") {
      has_schema = true;
      SHOAL_RETURN_IF_ERROR(ReadObjectText(value, field, &out->schema_json));
    } else if (key == "strict") {
      // Shoal always holds the output to the schema: strict or not, the
      // documents it writes validate.
      bool strict = false;
      SHOAL_RETURN_IF_ERROR(ReadBool(value, field, &strict));
    } else if (!value.is_null()) {
      // "description" is a hint for OpenAI's own models, which Shoal has no
      // place to put: refused rather than dropped.
      return InvalidInput(field + ": not supported (json_schema takes name, schema and strict)");
    }
  }
  if (out->name.empty()) return InvalidInput("response_format.json_schema.name: missing");
  if (!has_schema) return InvalidInput("response_format.json_schema.schema: missing");
  return Status::Ok();
}

// [{"id", "type": "function", "function": {"name", "arguments": "<JSON object>"}}]
static Status ReadToolCalls(const Json& v, const std::string& field, std::vector<ToolCall>* out) {
  if (!v.is_array()) return Expected(field, "an array of tool calls", v);
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = Indexed(field, i);
    const Json& c = v[i];
    if (!c.is_object()) return Expected(f, "an object", c);
    for (const auto& [key, value] : c.items()) {
      if (key != "id" && key != "type" && key != "function" && !value.is_null()) {
        return InvalidInput(f + "." + key + ": not a field of a tool call");
      }
    }
    ToolCall call;
    auto id = c.find("id");
    if (id == c.end()) return InvalidInput(f + ".id: missing");
    SHOAL_RETURN_IF_ERROR(ReadString(*id, f + ".id", &call.id));
    if (auto type = c.find("type"); type != c.end() && *type != "function") {
      return InvalidInput(f + ".type: only \"function\"");
    }
    auto fn = c.find("function");
    if (fn == c.end() || !fn->is_object()) return InvalidInput(f + ".function: missing (an object)");
    for (const auto& [key, value] : fn->items()) {
      if (key != "name" && key != "arguments") return InvalidInput(f + ".function." + key + ": not a field of a function call");
    }
    auto name = fn->find("name");
    auto arguments = fn->find("arguments");
    if (name == fn->end()) return InvalidInput(f + ".function.name: missing");
    if (arguments == fn->end()) return InvalidInput(f + ".function.arguments: missing");
    SHOAL_RETURN_IF_ERROR(ReadString(*name, f + ".function.name", &call.name));
    SHOAL_RETURN_IF_ERROR(ReadString(*arguments, f + ".function.arguments", &call.arguments));
    const Json args = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (!args.is_object()) return InvalidInput(f + ".function.arguments: not a JSON object's text");
    out->push_back(std::move(call));
  }
  return Status::Ok();
}

Status ReadMessages(const Json& v, std::string_view field, std::vector<ChatMessage>* out) {
  if (!v.is_array()) return Expected(field, "an array of messages", v);
  out->clear();
  out->reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = Indexed(field, i);
    const Json& m = v[i];
    if (!m.is_object()) return Expected(f, "an object", m);
    // A field not carried would be accepted and ignored: refused instead
    // (null, or an empty tool_calls, says nothing and passes).
    for (const auto& [key, value] : m.items()) {
      const bool says_nothing = value.is_null() || (key == "tool_calls" && value.is_array() && value.empty());
      if (key != "role" && key != "content" && key != "tool_calls" && key != "tool_call_id" && !says_nothing) {
        return InvalidInput(f + "." + key + ": not supported (a message carries role, content, tool_calls and tool_call_id)");
      }
    }
    ChatMessage msg;
    auto role = m.find("role");
    if (role == m.end()) return InvalidInput(f + ".role: missing");
    SHOAL_RETURN_IF_ERROR(ReadString(*role, f + ".role", &msg.role));
    auto content = m.find("content");
    if (content != m.end())
      SHOAL_RETURN_IF_ERROR(ReadContent(*content, f + ".content", &msg));
    if (auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
      SHOAL_RETURN_IF_ERROR(ReadToolCalls(*calls, f + ".tool_calls", &msg.tool_calls));
    }
    if (auto id = m.find("tool_call_id"); id != m.end() && !id->is_null()) {
      SHOAL_RETURN_IF_ERROR(ReadString(*id, f + ".tool_call_id", &msg.tool_call_id));
    }
    out->push_back(std::move(msg));
  }
  return Status::Ok();
}

Status Validate(const GenerateRequest& r) {
  if (r.model.empty()) return InvalidInput("model: missing");
  if (r.kind == GenerateRequest::Kind::kChat) {
    if (r.messages.empty()) return InvalidInput("messages: must hold at least one message");
    for (size_t i = 0; i < r.messages.size(); ++i) {
      const ChatMessage& m = r.messages[i];
      const std::string f = Indexed("messages", i);
      SHOAL_RETURN_IF_ERROR(CheckRole(m.role, f + ".role"));
      if (!m.tool_calls.empty() && m.role != "assistant") return InvalidInput(f + ".tool_calls: only an assistant's message makes calls");
      if (m.role == "tool" && m.tool_call_id.empty()) return InvalidInput(f + ".tool_call_id: missing (the call this answers)");
      if (m.role != "tool" && !m.tool_call_id.empty()) return InvalidInput(f + ".tool_call_id: only a tool's message answers a call");
    }
    if (!r.chat_template_kwargs_json.empty() && r.chat_template_kwargs_json.front() != '{') {
      return InvalidInput("chat_template_kwargs: expected an object");
    }
  }
  const ResponseFormat& f = r.response_format;
  if (f.type == ResponseFormat::Type::kJsonSchema && (f.name.empty() || f.schema_json.empty())) {
    return InvalidInput("response_format.json_schema: needs a name and a schema");
  }
  if (f.type == ResponseFormat::Type::kRegex && f.pattern.empty()) {
    return InvalidInput("response_format.pattern: must not be empty");
  }
  if (f.type == ResponseFormat::Type::kChoice) {
    if (f.choices.empty()) return InvalidInput("response_format.choices: must hold at least one choice");
    for (size_t i = 0; i < f.choices.size(); ++i) {
      if (f.choices[i].empty()) return InvalidInput("response_format.choices[" + std::to_string(i) + "]: must not be empty");
    }
  }
  const SamplingParams& s = r.sampling;
  if (!(s.temperature >= 0 && s.temperature <= 2)) {
    return InvalidInput("temperature: must be between 0 and 2, got " + Num(s.temperature));
  }
  if (!(s.top_p > 0 && s.top_p <= 1)) {
    return InvalidInput("top_p: must be greater than 0 and at most 1, got " + Num(s.top_p));
  }
  if (s.top_k < 0) return InvalidInput("top_k: must be at least 0, got " + std::to_string(s.top_k));
  if (s.stop.size() > kMaxStopStrings) {
    return InvalidInput("stop: at most " + std::to_string(kMaxStopStrings) + " stop strings (got " +
                        std::to_string(s.stop.size()) + ")");
  }
  for (size_t i = 0; i < s.stop.size(); ++i) {
    if (s.stop[i].empty()) return InvalidInput(Indexed("stop", i) + ": must not be empty");
  }
  for (size_t i = 0; i < s.stop_token_ids.size(); ++i) {
    if (s.stop_token_ids[i] < 0) {
      return InvalidInput(Indexed("stop_token_ids", i) + ": must be at least 0, got " +
                          std::to_string(s.stop_token_ids[i]));
    }
  }
  for (auto [name, value] : {std::pair{"presence_penalty", s.presence_penalty}, {"frequency_penalty", s.frequency_penalty}}) {
    if (!(value >= -2 && value <= 2)) return InvalidInput(std::string(name) + ": must be between -2 and 2, got " + Num(value));
  }
  if (!(s.repetition_penalty > 0 && s.repetition_penalty <= 2)) {
    return InvalidInput("repetition_penalty: must be greater than 0 and at most 2, got " + Num(s.repetition_penalty));
  }
  if (s.logit_bias.size() > kMaxLogitBias) {
    return InvalidInput("logit_bias: at most " + std::to_string(kMaxLogitBias) + " tokens (got " +
                        std::to_string(s.logit_bias.size()) + ")");
  }
  for (auto [id, bias] : s.logit_bias) {
    if (!(bias >= -100 && bias <= 100)) {
      return InvalidInput("logit_bias." + std::to_string(id) + ": must be between -100 and 100, got " + Num(bias));
    }
  }
  if (s.top_logprobs > kMaxTopLogprobs) {
    return InvalidInput("top_logprobs: at most " + std::to_string(kMaxTopLogprobs) + ", got " + std::to_string(s.top_logprobs));
  }
  if (s.top_logprobs > 0 && !s.logprobs) return InvalidInput("top_logprobs: needs logprobs: true");
  if (s.max_tokens > 0 && s.min_tokens > s.max_tokens) {
    return InvalidInput("min_tokens: " + std::to_string(s.min_tokens) + " is over max_tokens (" +
                        std::to_string(s.max_tokens) + ")");
  }
  return Status::Ok();
}

}  // namespace shoal::wire::gen
