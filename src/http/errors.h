// The API error contract: each Code's HTTP status, and the error body
// {"error":{"code","message","request_id"}} every route answers with.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::http {

int HttpStatus(Code code);

// Codes that tell the client to come back later carry `Retry-After`.
bool WantsRetryAfter(Code code);

std::string ErrorBody(const Status& status, std::string_view request_id);

}  // namespace shoal::http
