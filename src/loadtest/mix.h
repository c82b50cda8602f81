// Request mixes for a load sweep: generated for one route (seeded texts of
// a chosen length), or recorded in a JSONL file, one request a line:
//
//   {"path": "/v1/embeddings", "body": {"model": "m", "input": "hi"}, "weight": 2}
//   {"path": "/v1/encode/m", "body_text": "{\"items\":[]}", "content_type": "application/json"}
//
// `body` (any JSON value, sent as compact JSON) or `body_text` (sent as is),
// exactly one; `content_type` defaults to application/json, `weight` to 1.
// Each entry carries an estimate of its input tokens — the whitespace-
// separated words of its texts — counted only for answers that do not report
// usage.
//
// Threading: pure functions (ReadMixFile reads one file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "loadtest/load_generator.h"

namespace shoal::loadtest {

// The routes a mix can be generated for, and the body each sends.
enum class Route {
  kEncode,      // POST /v1/encode/{model}  {"items":[{"text":...}, ...]}
  kScore,       // POST /v1/score/{model}   {"query":..., "texts":[...]}
  kGenerate,    // POST /v1/generate/{model} {"prompt":..., "max_tokens":N}
  kEmbeddings,  // POST /v1/embeddings      {"model":..., "input": text or [texts]}
  kChat,  // POST /v1/chat/completions {"model", "messages":[{"role":"user",...}], "max_tokens"}
  kCompletions,  // POST /v1/completions     {"model", "prompt", "max_tokens"}
  kRerank,       // POST /v1/rerank          {"model", "query", "documents":[...]}
};

// "encode", "embeddings", "chat", ... or the route's path ("/v1/encode",
// "/v1/chat/completions"); INVALID_INPUT listing the choices otherwise.
Result<Route> ParseRoute(std::string_view name);

struct GeneratedMix {
  Route route = Route::kEncode;
  std::string model;
  // Words per text, drawn uniformly from [min_words, max_words].
  int min_words = 8, max_words = 8;
  // Texts per request: items (encode), inputs (embeddings; 1 sends a string),
  // texts (score), documents (rerank). Generation routes send one prompt.
  int items = 1;
  int max_tokens = 16;  // generation routes
  // Distinct requests, drawn uniformly while the load runs (so a cache in
  // front of the model does not answer them all).
  int distinct = 64;
  uint64_t seed = 1;
};

Result<std::vector<MixEntry>> GenerateMix(const GeneratedMix& spec);

// "16" (every text 16 words) or "4-64" (uniform); INVALID_INPUT otherwise.
Status ParseWordRange(std::string_view text, int* min_words, int* max_words);

// The mix in JSONL `text`; an error names `source` and the line ("mix.jsonl:3:
// ...").
Result<std::vector<MixEntry>> ParseMixJsonl(std::string_view text, const std::string& source);
Result<std::vector<MixEntry>> ReadMixFile(const std::string& path);

// The words in the texts of a request body (JSON): every string value but
// those of keys that are not text (model, role, encoding_format, id, ...).
// Not JSON: the words of the whole body.
uint64_t EstimateTokens(std::string_view body);

}  // namespace shoal::loadtest
