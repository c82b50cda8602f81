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

void Append(Generation& g, const wire::GenerationChunk& c) {
  const auto start = static_cast<uint32_t>(g.text.size());
  g.text += c.text;
  for (size_t i = 0; i < c.token_ids.size(); ++i) {
    g.token_ids.push_back(c.token_ids[i]);
    // The chunk's text is its first token's; text with no token extends the
    // previous token's (see Generation::token_offsets).
    g.token_offsets.push_back(i == 0 ? start : static_cast<uint32_t>(g.text.size()));
    if (g.request.sampling.logprobs) {
      g.logprobs.push_back(c.logprobs.empty() ? std::numeric_limits<float>::quiet_NaN()
                                              : c.logprobs[i]);
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

void OnGenerationResult(PendingTable& table, PendingRequest& p, const ChunkMessage& m) {
  Generation& g = *p.generation;
  if (!m.error.empty()) {
    table.Finish(p, http::ErrorResponse(Status(CodeFromName(m.error), std::string(m.payload)), p.id));
    return;
  }
  // Only the chunk expected next (generation.h says why the others are
  // another attempt's, already relayed).
  if (m.seq != g.next_seq) {
    spdlog::debug("rid={} chunk {} (attempt {}) skipped; expecting {}", p.id, m.seq, m.attempt,
                  g.next_seq);
    return;
  }
  wire::GenerationChunk c;
  if (Status s = wire::DecodeChunk(m.payload, &c); !s.ok()) {
    table.Finish(
        p, http::ErrorResponse(Status(Code::kInternal, "a worker sent a malformed chunk: " + s.message()),
                         p.id));
    return;
  }
  ++g.next_seq;
  g.attempts = std::max(g.attempts, m.attempt);
  Append(g, c);
  if (m.final) g.last = std::move(c);

  if (!g.request.stream) {
    if (m.final) table.Finish(p, GenerationResponse(p));
    return;
  }
  const bool first = !p.streaming;
  std::string events = StreamEvents(p, g, first, m.final);
  if (first) {
    // The head goes out now; when this chunk is also the last, the whole
    // stream is one response (with a length).
    http::Response head = StreamHead(p, std::move(events));
    m.final ? (void)table.Finish(p, std::move(head)) : table.Send(p, std::move(head));
    return;
  }
  if (events.empty() && !m.final) return;  // held-back tokens wait for their text
  http::Response part;
  part.body = std::move(events);
  m.final ? (void)table.Finish(p, std::move(part)) : table.Send(p, std::move(part));
}

}  // namespace shoal::gateway
