// What a worker's reply does to its pending request (the gateway side of
// wire/work_message.h), whichever dispatcher sent the work:
//
//   error     the request fails with the worker's code and message (which
//             item, when it has several)
//   result    fills the item's slot — a result sent in parts is joined first,
//             the parts of one attempt only (a later attempt's replace an
//             earlier one's) — and the last slot composes the response
//             (responses.h); a second result for a filled slot (a
//             redelivery) is ignored
//   chunk     a generation request's: relayed in order (generation.h)
//
// Threading: the lane's loop thread, as the request's.
#pragma once

#include <string_view>

#include "gateway/pending.h"
#include "queue/message.h"
#include "wire/work_message.h"

namespace shoal::gateway {

// Applies `h` and `body` (a view of `msg`, which a filled slot keeps) to `p`,
// a request of `table` not finished yet. Returns whether it changed `p`: a
// slot filled, or `p` finished.
bool ApplyReply(PendingTable& table, PendingRequest& p, const wire::ReplyHeader& h, std::string_view body,
                queue::Message msg);

}  // namespace shoal::gateway
