// A generation request at the gateway, from the route to its last chunk.
//
// The router parses the body (wire/generate_request.h) into a Generation,
// encodes the work message once and queues it as the request's items: one
// per output asked for (OpenAI's n), each with the same body. Each item's
// worker streams chunks back to the request's inbox (wire/generate.h), the
// item index naming the output; results.h hands each to
// OnGenerationResult, which relays, per output, the chunk it expects next
// and drops the others:
//
//   seq == next_seq        relayed: appended to the output; streamed to the
//                          client (SSE) or kept for the one answer at the end
//   anything else          dropped. One worker publishes its chunks in order
//                          over one connection, and core NATS keeps that
//                          order, so a chunk out of sequence is another
//                          attempt's: after a worker dies, JetStream
//                          redelivers the request and the new attempt starts
//                          again at seq 0. Workers seed sampling from
//                          the request id, so it regenerates the same tokens;
//                          its chunks are skipped until they pass what was
//                          relayed, and from there it carries on the stream.
//   final                  the output's last: usage and timing; the request
//                          finishes when every output has
//   error                  the request fails: a JSON error response if nothing
//                          was streamed yet, else an SSE error event that ends
//                          the stream (PendingTable::Finish)
//
// A streamed response starts (its head goes out) with the first relayed
// chunk, so a request that fails before any token — a prompt over the
// model's context, say — still gets a plain 4xx/5xx JSON error.
//
// Threading: a Generation belongs to its PendingRequest, on the lane's loop
// thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wire/generate.h"
#include "wire/work_message.h"

namespace shoal::gateway {

class PendingTable;
struct PendingRequest;

// Which API the client spoke: the response takes its shape.
enum class GenerationApi { kChat, kCompletions, kNative };

// One output of a generation (OpenAI's choice): the request's item of
// the same index streams it.
struct GenerationOutput {
  // Relay.
  uint64_t next_seq = 0;  // the chunk to relay next
  bool finished = false;  // its final chunk came

  // The output so far. Tokens and text arrive together in chunks; a chunk's
  // text is attributed to its first token, so token i's text is
  // text[token_offsets[i], token_offsets[i + 1]) and the tokens' texts
  // concatenate to `text` (what OpenAI's logprobs promise). A token held
  // back by the worker (a partial UTF-8 character) has empty text.
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;          // one per token, when asked
  std::vector<std::vector<wire::TopLogprob>> top_logprobs;  // one list per token, when asked
  std::vector<uint32_t> token_offsets;  // one per token: where its text starts in `text`
  wire::GenerationChunk last;           // the final chunk: finish reason, usage, timing

  // Streaming: how much of the output went out in events.
  bool opened = false;  // chat: its role delta went out
  size_t sent_text = 0;
  size_t sent_tokens = 0;
};

struct Generation {
  GenerationApi api = GenerationApi::kNative;
  wire::GenerateRequest request;
  std::string work;            // AppendGenerateWork(request): each item's payload
  int64_t created_unix_s = 0;  // OpenAI "created"
  uint32_t attempts = 1;       // the highest attempt seen
  std::vector<GenerationOutput> outputs;  // request.n of them
};

// The cost put on a generation request before a tokenizer has seen it:
// prompt tokens (~4 bytes each) plus the tokens it may generate.
uint32_t GenerationCost(const wire::GenerateRequest& r);

// Applies one reply to `p` (p.generation set, not finished): relays the
// chunk expected next, finishes `p` on the last one or an error. Returns
// whether `p` finished.
bool OnGenerationResult(PendingTable& table, PendingRequest& p, const wire::ReplyHeader& h,
                        std::string_view body);

}  // namespace shoal::gateway
