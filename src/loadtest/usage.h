// Token counts an answer reports: OpenAI's usage.prompt_tokens and
// usage.completion_tokens, Shoal's native usage.tokens, Cohere's
// meta.tokens.input_tokens. A scan for the keys, not a parse: the body of an
// embedding answer is mostly numbers, and this runs once per answer.
#pragma once

#include <cstdint>
#include <string_view>

namespace shoal::loadtest {

struct Usage {
  bool found = false;
  uint64_t input = 0, output = 0;
};

Usage ParseUsage(std::string_view body);

}  // namespace shoal::loadtest
