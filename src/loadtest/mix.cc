#include "loadtest/mix.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

#include "common/file.h"

namespace shoal::loadtest {
namespace {

using nlohmann::json;

// Common English words: texts of a known length in words, readable in logs.
constexpr const char* kWords[] = {
    "the",     "of",      "and",      "to",      "in",      "is",      "was",     "that",
    "for",     "it",      "with",     "as",      "on",      "be",      "at",      "by",
    "this",    "had",     "not",      "are",     "but",     "from",    "or",      "have",
    "an",      "they",    "which",    "one",     "you",     "were",    "all",     "she",
    "when",    "there",   "can",      "said",    "each",    "about",   "how",     "their",
    "time",    "will",    "way",      "many",    "then",    "them",    "would",   "like",
    "so",      "these",   "river",    "mill",    "stone",   "harbour", "market",  "winter",
    "letter",  "garden",  "window",   "bridge",  "village", "morning", "engine",  "forest",
    "island",  "machine", "question", "answer",  "number",  "picture", "light",   "water",
    "paper",   "music",   "family",   "country", "station", "school",  "doctor",  "kitchen",
    "quickly", "quietly", "never",    "always",  "often",   "almost",  "perhaps", "again",
    "across",  "between", "small",    "large",   "early",   "late",    "bright",  "cold",
    "warm",    "green",   "heavy",    "simple",
};
constexpr size_t kWordCount = sizeof kWords / sizeof kWords[0];

std::string Text(std::mt19937_64& rng, int words) {
  std::uniform_int_distribution<size_t> pick(0, kWordCount - 1);
  std::string out;
  for (int i = 0; i < words; ++i) {
    if (i) out += ' ';
    out += kWords[pick(rng)];
  }
  return out;
}

uint64_t Words(std::string_view s) {
  uint64_t n = 0;
  bool in_word = false;
  for (char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

uint64_t JsonWords(const json& v, const std::string& key) {
  static const char* const kNotText[] = {"model", "role", "encoding_format", "id", "type",
                                         "name",  "stop"};
  if (v.is_string()) {
    for (const char* k : kNotText) {
      if (key == k) return 0;
    }
    return Words(v.get_ref<const std::string&>());
  }
  uint64_t n = 0;
  if (v.is_object()) {
    for (const auto& [k, child] : v.items()) n += JsonWords(child, k);
  } else if (v.is_array()) {
    for (const auto& child : v) n += JsonWords(child, key);
  }
  return n;
}

std::string RouteNames() {
  return "encode, score, generate, embeddings, chat, completions, rerank";
}

}  // namespace

Result<Route> ParseRoute(std::string_view name) {
  std::string n(name);
  if (n.size() > 1 && n.back() == '/') n.pop_back();
  if (n == "encode" || n == "/v1/encode") return Route::kEncode;
  if (n == "score" || n == "/v1/score") return Route::kScore;
  if (n == "generate" || n == "/v1/generate") return Route::kGenerate;
  if (n == "embeddings" || n == "/v1/embeddings") return Route::kEmbeddings;
  if (n == "chat" || n == "/v1/chat/completions") return Route::kChat;
  if (n == "completions" || n == "/v1/completions") return Route::kCompletions;
  if (n == "rerank" || n == "/v1/rerank") return Route::kRerank;
  return InvalidInput("route '" + std::string(name) + "': expected one of " + RouteNames() +
                      " (or its path, e.g. /v1/embeddings)");
}

Status ParseWordRange(std::string_view text, int* min_words, int* max_words) {
  const std::string s(text);
  char* end = nullptr;
  const long lo = std::strtol(s.c_str(), &end, 10);
  long hi = lo;
  if (end != s.c_str() && *end == '-') {
    const char* rest = end + 1;
    hi = std::strtol(rest, &end, 10);
    if (end == rest) end = nullptr;
  }
  if (s.empty() || end == nullptr || *end != '\0' || end == s.c_str() || lo < 1 || hi < lo ||
      hi > 100000) {
    return InvalidInput("words per text '" + s + "': expected N or MIN-MAX, 1 <= MIN <= MAX");
  }
  *min_words = static_cast<int>(lo);
  *max_words = static_cast<int>(hi);
  return Status::Ok();
}

Result<std::vector<MixEntry>> GenerateMix(const GeneratedMix& g) {
  if (g.model.empty()) return InvalidInput("a generated mix needs a model");
  if (g.min_words < 1 || g.max_words < g.min_words)
    return InvalidInput("words per text: need 1 <= min <= max");
  if (g.items < 1) return InvalidInput("items per request must be at least 1");
  if (g.distinct < 1) return InvalidInput("distinct requests must be at least 1");
  if (g.max_tokens < 1) return InvalidInput("max_tokens must be at least 1");
  std::mt19937_64 rng(g.seed);
  std::uniform_int_distribution<int> length(g.min_words, g.max_words);
  auto texts = [&](int n) {
    json a = json::array();
    for (int i = 0; i < n; ++i) a.push_back(Text(rng, length(rng)));
    return a;
  };
  std::vector<MixEntry> mix;
  for (int d = 0; d < g.distinct; ++d) {
    MixEntry e;
    e.content_type = "application/json";
    json body;
    switch (g.route) {
      case Route::kEncode: {
        e.path = "/v1/encode/" + g.model;
        json items = json::array();
        for (const auto& t : texts(g.items)) items.push_back({{"text", t}});
        body = {{"items", items}};
        break;
      }
      case Route::kScore:
        e.path = "/v1/score/" + g.model;
        body = {{"query", Text(rng, length(rng))}, {"texts", texts(g.items)}};
        break;
      case Route::kGenerate:
        e.path = "/v1/generate/" + g.model;
        body = {{"prompt", Text(rng, length(rng))}, {"max_tokens", g.max_tokens}};
        break;
      case Route::kEmbeddings: {
        e.path = "/v1/embeddings";
        json input = texts(g.items);
        body = {{"model", g.model}, {"input", g.items == 1 ? input[0] : input}};
        break;
      }
      case Route::kChat:
        e.path = "/v1/chat/completions";
        body = {
            {"model", g.model},
            {"messages", json::array({{{"role", "user"}, {"content", Text(rng, length(rng))}}})},
            {"max_tokens", g.max_tokens}};
        break;
      case Route::kCompletions:
        e.path = "/v1/completions";
        body = {
            {"model", g.model}, {"prompt", Text(rng, length(rng))}, {"max_tokens", g.max_tokens}};
        break;
      case Route::kRerank:
        e.path = "/v1/rerank";
        body = {
            {"model", g.model}, {"query", Text(rng, length(rng))}, {"documents", texts(g.items)}};
        break;
    }
    e.body = body.dump();
    e.estimated_tokens = JsonWords(body, "");
    mix.push_back(std::move(e));
  }
  return mix;
}

Result<std::vector<MixEntry>> ParseMixJsonl(std::string_view text, const std::string& source) {
  std::vector<MixEntry> mix;
  size_t line_no = 0;
  for (size_t at = 0; at < text.size();) {
    size_t eol = text.find('\n', at);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(at, eol - at);
    at = eol + 1;
    ++line_no;
    const auto fail = [&](const std::string& why) {
      return InvalidInput(source + ":" + std::to_string(line_no) + ": " + why);
    };
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank
    json v = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded()) return fail("not a JSON value");
    if (!v.is_object())
      return fail("expected an object {\"path\", \"body\" or \"body_text\", ...}");
    MixEntry e;
    for (const auto& [key, value] : v.items()) {
      if (key == "path") {
        if (!value.is_string() || value.get_ref<const std::string&>().empty() ||
            value.get_ref<const std::string&>()[0] != '/') {
          return fail("\"path\": expected a string starting with /");
        }
        e.path = value.get<std::string>();
      } else if (key == "body") {
        e.body = value.dump();
      } else if (key == "body_text") {
        if (!value.is_string()) return fail("\"body_text\": expected a string");
        e.body = value.get<std::string>();
      } else if (key == "content_type") {
        if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
          return fail("\"content_type\": expected a non-empty string");
        }
        e.content_type = value.get<std::string>();
      } else if (key == "weight") {
        if (!value.is_number() || !(value.get<double>() > 0) ||
            !std::isfinite(value.get<double>())) {
          return fail("\"weight\": expected a positive number");
        }
        e.weight = value.get<double>();
      } else {
        return fail("unknown field \"" + key +
                    "\" (expected path, body, body_text, content_type, weight)");
      }
    }
    if (e.path.empty()) return fail("missing \"path\"");
    if (v.contains("body") == v.contains("body_text"))
      return fail("expected exactly one of \"body\" and \"body_text\"");
    if (e.content_type.empty()) e.content_type = "application/json";
    e.estimated_tokens = EstimateTokens(e.body);
    mix.push_back(std::move(e));
  }
  if (mix.empty()) return InvalidInput(source + ": no requests (one JSON object a line)");
  return mix;
}

Result<std::vector<MixEntry>> ReadMixFile(const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseMixJsonl(text, path);
}

uint64_t EstimateTokens(std::string_view body) {
  json v = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return Words(body);
  return JsonWords(v, "");
}

}  // namespace shoal::loadtest
