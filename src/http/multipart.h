// multipart/form-data bodies (RFC 7578), as OpenAI clients upload files
// (POST /v1/files): the boundary from the Content-Type, then each part's
// Content-Disposition name and filename, its Content-Type, and its bytes.
// Parts are views into the body. Malformed bodies are INVALID_INPUT naming
// what is wrong.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::http {

struct FormPart {
  std::string name;
  std::string filename;      // empty when the part is not a file
  std::string content_type;  // empty when not given
  std::string_view data;     // into the body
};

// `content_type` is the request's header ("multipart/form-data; boundary=...").
Result<std::vector<FormPart>> ParseMultipart(std::string_view content_type, std::string_view body);

}  // namespace shoal::http
