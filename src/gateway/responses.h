// The body and timing headers of a finished request, in the format the
// client asked for: native encode as MessagePack (results spliced byte for
// byte, unless the request cut or typed its vectors: wire/dense_output.h) or
// JSON (transcoded), OpenAI embeddings, Cohere embed (v1 and v2), native
// scores, Cohere rerank, or TEI-style tokens — the last three as
// MessagePack when the client asked (transcoded from their JSON).
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
