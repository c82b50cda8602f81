// The body and timing headers of a finished request, in the format the
// client asked for: native encode as MessagePack (results spliced byte for
// byte) or JSON (transcoded), OpenAI embeddings, native scores, Cohere
// rerank, or TEI-style tokens.
#pragma once

#include "http/http.h"
#include "gateway/pending.h"

namespace shoal::gateway {

// Call once every slot is filled (the caller holds no lock: results are
// complete and no longer written).
http::Response ComposeResponse(const PendingRequest& p);

// The error response for a request one of whose items failed; the message
// says which item when there is more than one.
http::Response ItemErrorResponse(const PendingRequest& p, size_t index, const Status& error);

}  // namespace shoal::gateway
