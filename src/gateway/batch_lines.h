// A batch job's lines: the requests of its input file as OpenAI's Batch
// API writes them, and the lines of its output and error files.
//
// Input, one JSON object per line (blank lines skipped):
//   {"custom_id": "req-1", "method": "POST", "url": "/v1/embeddings",
//    "body": {...the route's request...}}
// Output file, a line per request answered 2xx; error file, a line per
// other answer:
//   {"id": "batch_req_...", "custom_id": "req-1",
//    "response": {"status_code": 200, "request_id": "...", "body": {...}},
//    "error": null}
// and per line that could not be sent (malformed, or unrun when the
// job expired): "response": null, "error": {"code", "message"}.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::gateway {

// Calls `fn(number, text)` for each line of `jsonl` that is not blank
// (numbered from 1, blank lines counted; a "\r\n" ending accepted) until
// one returns an error, which it returns.
template <class Fn>
Status ForEachJsonlLine(std::string_view jsonl, Fn&& fn) {
  uint32_t number = 0;
  while (!jsonl.empty()) {
    ++number;
    const size_t eol = std::min(jsonl.find('\n'), jsonl.size());
    std::string_view text = jsonl.substr(0, eol);
    jsonl.remove_prefix(std::min(eol + 1, jsonl.size()));
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.find_first_not_of(" \t") == std::string_view::npos) continue;
    SHOAL_RETURN_IF_ERROR(fn(number, text));
  }
  return Status::Ok();
}

// OpenAI's limit on the requests of one batch.
inline constexpr size_t kMaxBatchRequests = 50000;

// Whether a batch may target `endpoint`: the OpenAI and Cohere routes
// (/v1/chat/completions, /v1/completions, /v1/embeddings, /v1/embed,
// /v2/embed, /v1/rerank, /v2/rerank) and the native ones (/v1/encode,
// /v1/score, /v1/extract, /v1/generate), whose lines' urls name the model
// ("/v1/extract/ner-model").
Status CheckBatchEndpoint(std::string_view endpoint);

struct BatchLine {
  uint32_t number = 0;    // its line in the file, from 1
  std::string custom_id;  // "" when the line has none
  std::string url;
  std::string body;       // the request's JSON
  std::string error;      // why it cannot be sent; "" when it can
};

// The requests of `jsonl` for a batch on `endpoint`; a line that cannot be
// sent (not an object, no or a repeated custom_id, another method or url,
// a body that is not an object or asks to stream) carries its error.
// INVALID_INPUT when the file holds no request, or more than `max_lines`.
Result<std::vector<BatchLine>> ParseBatchLines(std::string_view jsonl, std::string_view endpoint,
                                               size_t max_lines = kMaxBatchRequests);

// The output or error file's line for a request answered `status_code`
// with `body` (JSON; kept as a string if it is not).
std::string AnsweredLine(const BatchLine& line, int status_code, std::string_view request_id, std::string_view body);
// The error file's line for a request never answered.
std::string UnsentLine(const BatchLine& line, std::string_view code, std::string_view message);

// OpenAI's completion window "24h", or a shorter one ("30m", "90s"; at
// least 1 s): seconds.
Result<int64_t> ParseCompletionWindow(std::string_view window);

}  // namespace shoal::gateway
