#include "loadtest/usage.h"

#include <optional>

namespace shoal::loadtest {
namespace {

void SkipSpace(std::string_view s, size_t* p) {
  while (*p < s.size() && (s[*p] == ' ' || s[*p] == '\t' || s[*p] == '\n' || s[*p] == '\r')) ++*p;
}

// The unsigned integer after the first `"key":` in `s`.
std::optional<uint64_t> NumberAfter(std::string_view s, std::string_view quoted_key) {
  for (size_t at = s.find(quoted_key); at != std::string_view::npos;
       at = s.find(quoted_key, at + 1)) {
    size_t p = at + quoted_key.size();
    SkipSpace(s, &p);
    if (p >= s.size() || s[p] != ':') continue;
    ++p;
    SkipSpace(s, &p);
    uint64_t v = 0;
    size_t digits = 0;
    for (; p < s.size() && s[p] >= '0' && s[p] <= '9'; ++p, ++digits)
      v = v * 10 + static_cast<uint64_t>(s[p] - '0');
    if (digits) return v;
  }
  return std::nullopt;
}

}  // namespace

Usage ParseUsage(std::string_view body) {
  Usage u;
  // The last "usage" is the answer's own (a stream's earlier chunks say null);
  // JSON strings cannot hold an unescaped quote, so texts cannot fake it.
  if (const size_t at = body.rfind("\"usage\""); at != std::string_view::npos) {
    size_t p = at + 7;
    SkipSpace(body, &p);
    if (p < body.size() && body[p] == ':') {
      ++p;
      SkipSpace(body, &p);
      if (p < body.size() && body[p] == '{') {
        size_t end = p;
        for (int depth = 0; end < body.size(); ++end) {
          if (body[end] == '{') ++depth;
          if (body[end] == '}' && --depth == 0) break;
        }
        const std::string_view usage = body.substr(p, end - p + 1);
        std::optional<uint64_t> input = NumberAfter(usage, "\"prompt_tokens\"");
        if (!input) input = NumberAfter(usage, "\"tokens\"");
        if (!input) input = NumberAfter(usage, "\"input_tokens\"");
        std::optional<uint64_t> output = NumberAfter(usage, "\"completion_tokens\"");
        if (!output) output = NumberAfter(usage, "\"output_tokens\"");
        if (input || output) {
          u.found = true;
          u.input = input.value_or(0);
          u.output = output.value_or(0);
          return u;
        }
      }
    }
  }
  // Cohere's rerank: meta.tokens.input_tokens.
  if (const size_t at = body.rfind("\"input_tokens\""); at != std::string_view::npos) {
    if (auto input = NumberAfter(body.substr(at), "\"input_tokens\"")) {
      u.found = true;
      u.input = *input;
      u.output = NumberAfter(body.substr(at), "\"output_tokens\"").value_or(0);
    }
  }
  return u;
}

}  // namespace shoal::loadtest
