// What a client sees of a generation, in the shape of the API it spoke
// (gateway/generation.h has the life of the request):
//
// Non-stream, once, at the final chunk:
//   chat         {"id":"chatcmpl-<request id>","object":"chat.completion","created","model",
//                 "choices":[{"index":0,"message":{"role":"assistant","content"},
//                             "logprobs":null|{"content":[{"token","logprob","bytes","top_logprobs":[]}]},
//                             "finish_reason"}],
//                 "usage":{"prompt_tokens","completion_tokens","total_tokens",
//                          "prompt_tokens_details":{"cached_tokens"}}}
//   completions  {"id":"cmpl-<request id>","object":"text_completion","created","model",
//                 "choices":[{"index":0,"text","logprobs":null|{"tokens","token_logprobs",
//                             "text_offset","top_logprobs":null},"finish_reason"}],"usage"}
//   native       {"id","model","text","token_ids",("logprobs":[...]),"finish_reason","usage",
//                 "timing":{"ttft_ms","itl_ms","queue_ms"}}
//   with headers X-Shoal-Request-Id, -Queue-Ms, -TTFT-Ms, -ITL-Ms, -Total-Ms, -Attempts.
//   With n > 1 (chat, completions), "choices" has n entries, index 0…n-1; usage
//   counts the prompt once and every output's tokens.
//
// Stream, as Server-Sent Events `data: <json>`:
//   chat         a chat.completion.chunk with delta {"role":"assistant","content":""}; one per
//                relayed chunk with text, delta {"content"}; the last with delta {} and
//                finish_reason; with stream_options.include_usage a chunk with "choices":[]
//                and usage (and "usage":null on the others); then [DONE]
//   completions  text_completion chunks with choices[0].text, the last with finish_reason,
//                usage as chat; then [DONE]
//   native       {"text","token_ids"(,"logprobs")} per relayed chunk with text; the last adds
//                "finish_reason","usage","timing"; then [DONE]
//   With n > 1 each chunk carries one choice with its index, the outputs interleaved as
//   their tokens come; each ends with its own finish_reason; usage and [DONE] follow the
//   last.
// Tokens a worker held back (a chunk with no text) go out with the next text.
#pragma once

#include <string>

#include "http/http.h"
#include "gateway/pending.h"

namespace shoal::gateway {

// The whole answer of a non-stream request (call at its final chunk).
http::Response GenerationResponse(const PendingRequest& p);

// The head of `p`'s event stream, carrying `events` as its first part.
http::Response StreamHead(const PendingRequest& p, std::string events);

// The events for what output `index` (`o`) relayed since the last call;
// advances o.sent_text and o.sent_tokens. An output's first call opens its
// choice (chat: the role delta); the one after its final chunk closes it
// (finish reason); `done` (every output finished) ends the stream (usage,
// [DONE]).
std::string StreamEvents(const PendingRequest& p, const Generation& g, GenerationOutput& o, size_t index,
                         bool done);

}  // namespace shoal::gateway
