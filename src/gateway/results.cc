#include "gateway/results.h"

#include "gateway/generation.h"
#include "gateway/responses.h"

namespace shoal::gateway {
namespace {

// Adds a part of a result sent in parts; true when it completed `r.owned`.
bool AddPart(ItemResult& r, const wire::ReplyHeader& h, std::string_view body) {
  if (h.part >= h.parts || h.parts > wire::kMaxResultParts || body.empty()) {
    return false;  // malformed (parts are never empty): the deadline answers the request
  }
  // Parts of one attempt only: a redelivery may overlap a slow first try,
  // and their bytes need not match. The later attempt wins.
  if (h.attempt < r.parts_attempt) return false;
  if (h.attempt > r.parts_attempt || r.parts.size() != h.parts) {
    r.parts.assign(h.parts, {});
    r.parts_received = 0;
    r.parts_attempt = h.attempt;
  }
  if (!r.parts[h.part].empty()) return false;  // a duplicate
  r.parts[h.part].assign(body);
  if (++r.parts_received < h.parts) return false;
  r.owned.clear();
  for (std::string& piece : r.parts) r.owned += piece;
  r.parts = {};
  return true;
}

}  // namespace

bool ApplyReply(PendingTable& table, PendingRequest& p, const wire::ReplyHeader& h, std::string_view body,
                queue::Message msg) {
  if (p.generation) {
    const bool finished = OnGenerationResult(table, p, h, body);
    table.Free(std::move(msg));
    return finished;
  }
  if (h.error != Code::kOk) {
    table.Finish(p, ItemErrorResponse(p, h.item, Status(h.error, std::string(body))));
    table.Free(std::move(msg));
    return true;
  }
  if (h.item >= p.results.size() || p.results[h.item].filled) {
    table.Free(std::move(msg));
    return false;
  }
  ItemResult& r = p.results[h.item];
  if (h.parts == 0) {
    r.message = std::move(msg);  // kept: the response reads the result where it arrived
    r.payload = body;
  } else {
    const bool complete = AddPart(r, h, body);
    table.Free(std::move(msg));
    if (!complete) return false;  // more parts to come
    r.payload = r.owned;
  }
  r.filled = true;
  r.tokens = h.tokens;
  r.truncated = h.truncated;
  r.cold_start = h.cold_start;
  r.queue_us = h.queue_us;
  r.inference_us = h.inference_us;
  r.attempt = h.attempt;
  if (--p.remaining == 0) {
    p.results_in_at = SteadyClock::now();
    table.Finish(p, ComposeResponse(p));
  }
  return true;
}

}  // namespace shoal::gateway
