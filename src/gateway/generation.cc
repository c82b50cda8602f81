#include "gateway/generation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/log.h"
#include "gateway/generation_responses.h"
#include "gateway/pending.h"

namespace shoal::gateway {
namespace {

// What a request that sets no max_tokens is assumed to generate, for its cost.
constexpr uint64_t kDefaultOutputTokens = 256;

void Append(const Generation& g, GenerationOutput& o, const wire::GenerationChunk& c) {
  const auto start = static_cast<uint32_t>(o.text.size());
  o.text += c.text;
  for (size_t i = 0; i < c.token_ids.size(); ++i) {
    o.token_ids.push_back(c.token_ids[i]);
    // The chunk's text is its first token's; text with no token extends the
    // previous token's (see GenerationOutput::token_offsets).
    o.token_offsets.push_back(i == 0 ? start : static_cast<uint32_t>(o.text.size()));
    if (g.request.sampling.logprobs) {
      o.logprobs.push_back(c.logprobs.empty() ? std::numeric_limits<float>::quiet_NaN()
                                              : c.logprobs[i]);
    }
    if (g.request.sampling.top_logprobs > 0) {
      o.top_logprobs.push_back(i < c.top_logprobs.size() ? c.top_logprobs[i] : std::vector<wire::TopLogprob>{});
    }
  }
}

}  // namespace

uint32_t GenerationCost(const wire::GenerateRequest& r) {
  size_t bytes = r.prompt.size();
  for (const auto& m : r.messages) bytes += m.content.size();
  const uint64_t out = r.sampling.max_tokens ? r.sampling.max_tokens : kDefaultOutputTokens;
  return static_cast<uint32_t>(
      std::min<uint64_t>(bytes / 4 + out, std::numeric_limits<uint32_t>::max()));
}

bool OnGenerationResult(PendingTable& table, PendingRequest& p, const wire::ReplyHeader& h,
                        std::string_view body) {
  Generation& g = *p.generation;
  if (h.error != Code::kOk) {
    return table.Finish(p, http::ErrorResponse(Status(h.error, std::string(body)), p.id));
  }
  if (h.item >= g.outputs.size()) return false;  // not one of its items
  GenerationOutput& o = g.outputs[h.item];
  // Only the chunk expected next (generation.h says why the others are
  // another attempt's, already relayed).
  if (o.finished || h.seq != o.next_seq) {
    spdlog::debug("rid={} output {} chunk {} (attempt {}) skipped; expecting {}", p.id, h.item, h.seq, h.attempt,
                  o.next_seq);
    return false;
  }
  wire::GenerationChunk c;
  if (Status s = wire::DecodeChunk(body, &c); !s.ok()) {
    return table.Finish(
        p, http::ErrorResponse(Status(Code::kInternal, "a worker sent a malformed chunk: " + s.message()), p.id));
  }
  ++o.next_seq;
  g.attempts = std::max(g.attempts, h.attempt);
  Append(g, o, c);
  if (h.final) {
    o.last = std::move(c);
    o.finished = true;
  }
  const bool done = std::all_of(g.outputs.begin(), g.outputs.end(), [](const auto& x) { return x.finished; });

  if (!g.request.stream) {
    return done && table.Finish(p, GenerationResponse(p));
  }
  const bool first = !p.streaming;
  std::string events = StreamEvents(p, g, o, h.item, done);
  if (first) {
    // The head goes out now; when this chunk is also the last, the whole
    // stream is one response (with a length).
    http::Response head = StreamHead(p, std::move(events));
    if (done) return table.Finish(p, std::move(head));
    table.Send(p, std::move(head));
    return false;
  }
  if (events.empty() && !done) return false;  // held-back tokens wait for their text
  http::Response part;
  part.body = std::move(events);
  if (done) return table.Finish(p, std::move(part));
  table.Send(p, std::move(part));
  return false;
}

}  // namespace shoal::gateway
