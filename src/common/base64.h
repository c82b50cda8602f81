// Base64 (RFC 4648): what JSON carries binary in (a tokenizer's precompiled
// charsmap, an image in a request, vectors in a response), and the URL-safe
// alphabet that NATS object stores name objects and digests in.
#pragma once

#include <string>
#include <string_view>

namespace shoal {

// The standard alphabet, padding optional; false on any other byte.
bool DecodeBase64(std::string_view text, std::string* out);

// The standard alphabet, padded, appended to `out`.
void AppendBase64(std::string_view bytes, std::string* out);

// The URL-safe alphabet ('-' and '_' for '+' and '/'), with padding, as Go's
// base64.URLEncoding writes it.
std::string EncodeBase64Url(std::string_view bytes);

}  // namespace shoal
