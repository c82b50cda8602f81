// Score, rerank and tokenize requests (JSON), parsed into WorkRequest items
// like encode requests are (encode_request.h).
//
// Native score (POST /v1/score/{model}), one item per (query, text) pair:
//   {"query": "...", "texts": ["...", ...], "truncate": false, "raw_scores": false,
//    "lora": "adapter"}
// or, for an image–text model, one item per (text, image) pair:
//   {"query": "...", "images": [base64 | data URL, ...]}
//   {"query": {"image": base64 | data URL}, "texts": ["...", ...]}
// Cohere rerank (POST /v1/rerank):
//   {"model": "...", "query": "...", "documents": ["..." | {"text": "...", "id": ...}],
//    "top_n": 3, "return_documents": false, "truncate": false, "raw_scores": false}
// Tokenize (POST /v1/tokenize/{model}, as TEI):
//   {"inputs": "..." | ["...", ...], "add_special_tokens": true, "lora": "adapter"}
//   (an adapter does not change the tokens; it is accepted for symmetry)
#pragma once

#include <string>

#include "common/status.h"
#include "wire/encode_request.h"

namespace shoal::wire {

Status ParseScoreJson(std::string& body, const ParseLimits& limits, WorkRequest* out);
Status ParseRerankJson(std::string& body, const ParseLimits& limits, WorkRequest* out);
Status ParseTokenizeJson(std::string& body, const ParseLimits& limits, WorkRequest* out);

}  // namespace shoal::wire
