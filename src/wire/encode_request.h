// Requests as the gateway sees them: validated, split into items, each item
// ready to publish as a work message, with a cost estimate — without
// decoding more than it needs. This file parses encode requests;
// score_request.h parses score, rerank and tokenize requests, and
// extract_request.h extract requests, into the same WorkRequest.
//
// Native body (POST /v1/encode/{model}), MessagePack (default) or JSON:
//   {"items": [{"text": "..."} | {"image": <bytes>}, ...], "truncate": false,
//    "normalize": true, "lora": "adapter"}
//   (an image: MessagePack bin, or in JSON a base64 string or base64 data URL)
//   and, as dense_output.h defines them, "dimensions": n (one of the
//   model's Matryoshka dimensions) and "dtype": "float32" | "float16" |
//   "int8" | "uint8" | "binary" | "ubinary"; "output": "dense" | "sparse" |
//   "multivector" or a list of them (absent: the model's first), "input_type":
//   "query" | "document", "sparse_top_k": n, "sparse_tokens": true.
// OpenAI body (POST /v1/embeddings), JSON:
//   {"model": "...", "input": "..." | ["...", ...] | [id, ...] | [[id, ...], ...],
//    (among the strings, image parts: {"type": "image_url", "image_url":
//    {"url": "data:image/png;base64,..."}})
//    "encoding_format": "float" | "base64", "dimensions": n}
// Cohere body (POST /v1/embed, /v2/embed), JSON:
//   {"model": "...", "texts": ["...", ...], "input_type": "search_query" |
//    "search_document" | "classification" | "clustering",
//    "embedding_types": ["float", "int8", "uint8", "binary", "ubinary"],
//    "truncate": "NONE" | "END", "output_dimension": n (v2)}
// Any other field is INVALID_INPUT naming it: none is accepted and ignored.
//
// A MessagePack item is forwarded byte for byte (a view into the body); a JSON
// item is re-encoded once into MessagePack in `storage`. Errors name the field:
// 400 INVALID_INPUT "items[2].text: expected a string, got an integer", or
// 413 PAYLOAD_TOO_LARGE for an item over the per-item limit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "wire/dense_output.h"
#include "wire/item.h"

namespace shoal::wire {

struct EncodeOptions {
  bool truncate = false;   // cut inputs over the model's limit instead of failing
  bool normalize = true;   // unit-length vectors
  // Encode (native route): what to produce (0: the model's default output),
  // query or document, and for sparse output the k largest weights only
  // and each index's token. The router checks them against the model.
  OutputKinds outputs = 0;
  InputRole role = InputRole::kUnspecified;
  uint32_t sparse_top_k = 0;
  bool sparse_tokens = false;
};

struct RequestItem {
  std::string_view payload;  // MessagePack {"text": ...} or {"ids": [...]} (see item.h)
  uint32_t cost = 0;         // estimated tokens (exact for ids)
  // Set by the gateway once the item's bytes are in the payload store: its
  // work message names the key (wire::PayloadKey) instead of carrying them.
  bool offloaded = false;
};

// Rerank (Cohere) only: how to present the ranking.
struct RerankOptions {
  size_t top_n = 0;               // 0: all documents
  bool return_documents = false;  // echo each document's text
  std::vector<std::string> ids;   // the caller's document ids as JSON ("" if none)
  std::vector<std::string> texts; // kept only when return_documents
};

// Cohere's routes: the API version (rerank and embed), and for embed what
// the response echoes and how it is shaped.
struct CohereEmbedOptions {
  int version = 0;                 // 1 or 2; 0: not a Cohere request
  std::string input_type;          // picks the model's prompt (router.cc)
  bool by_type = false;            // v1: embeddings keyed by type (embedding_types given)
  std::vector<std::string> texts;  // echoed in the response
};

// Extract only (extract_request.h): what the model is asked for beyond its
// defaults.
struct ExtractOptions {
  std::optional<Aggregation> aggregation;  // token classifiers
  uint32_t top_k = 0;                      // text classifiers; 0: all labels
  // "output": "ocr" — lines of text read from images; only an OCR pipeline
  // (runtime ocr) gives them, and it gives nothing else.
  bool ocr = false;
};

struct WorkRequest {
  std::string model;  // OpenAI and Cohere routes: the body's "model"
  // The LoRA adapter to run under: the native body's "lora" as parsed; the
  // router then settles it from every form the request used ("base:lora"
  // too) and checks it (router.cc). Empty: the base model.
  std::string lora;
  Task task = Task::kEncode;
  std::vector<RequestItem> items;
  EncodeOptions options;
  bool base64 = false;      // OpenAI encoding_format
  bool raw_scores = false;  // score/rerank: logits instead of sigmoid(logit)
  RerankOptions rerank;
  DenseOutput dense;           // encode: dimensions and element types
  ExtractOptions extract;
  CohereEmbedOptions cohere;
  // JSON items re-encoded as MessagePack; `items` may point into it. Held by
  // pointer so the views survive a move of the request.
  std::unique_ptr<std::string> storage;

  // A copy that owns its items' bytes (in `storage`), none of them
  // offloaded: it outlives the body this one points into. (It copies each
  // field by name: a field added here is added there.)
  WorkRequest Clone() const;
};

struct ParseLimits {
  size_t max_items = 2048;
  // Items over what fits a NATS message wait in the payload store, so an
  // item may be as large as a body (http::ServerOptions::max_body_bytes).
  size_t max_item_bytes = 16 * 1024 * 1024;
};

// The cost the gateway puts on an item before any tokenizer has seen it:
// roughly four bytes of text per token.
uint32_t EstimateTokens(size_t text_bytes);

// The cost of an image item, in the same units: its pixels are not looked
// at here, and a ViT-B/16 at 224² is 197 positions.
inline constexpr uint32_t kImageItemCost = 256;

// `body` must outlive the request (its items may be views into it).
Status ParseEncodeMsgpack(std::string_view body, const ParseLimits& limits, WorkRequest* out);

// `body` may grow in capacity (JSON parsing needs padding after the text).
Status ParseEncodeJson(std::string& body, const ParseLimits& limits, WorkRequest* out);
Status ParseOpenAiEmbeddings(std::string& body, const ParseLimits& limits, WorkRequest* out);
// `version`: 1 or 2, the route's.
Status ParseCohereEmbed(std::string& body, int version, const ParseLimits& limits, WorkRequest* out);

// Puts `prefix` before every item's text (a prompt), re-encoding the items
// and their cost estimates.
Status PrefixTexts(std::string_view prefix, const ParseLimits& limits, WorkRequest* request);

}  // namespace shoal::wire
