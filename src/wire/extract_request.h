// Extract requests (POST /v1/extract/{model}), MessagePack (default) or
// JSON, parsed into WorkRequest items like encode requests are:
//   {"items": [{"text": "..."} | {"image": ...} | {"document": ..., "pages": "1-3"}, ...],
//    "truncate": false, "lora": "adapter",
//    "aggregation": "none" | "simple" | "first" | "average" | "max",
//    "top_k": n, "output": "ocr"}
// aggregation is for token classifiers (NER; default simple), top_k for
// text classifiers (default: every label); the model refuses the one that
// is not its own (runtime/extraction.h). output "ocr" asks for lines of text
// read from images, which only an OCR pipeline gives (the gateway refuses
// it to another model; an OCR pipeline gives lines with or without it).
// Any other field is INVALID_INPUT.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "wire/encode_request.h"

namespace shoal::wire {

Status ParseExtractMsgpack(std::string_view body, const ParseLimits& limits, WorkRequest* out);
Status ParseExtractJson(std::string& body, const ParseLimits& limits, WorkRequest* out);

}  // namespace shoal::wire
