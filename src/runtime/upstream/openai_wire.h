// The OpenAI API as an upstream speaks it: request bodies made from the
// runtime contract's inputs, and the replies read back (pure functions; the
// HTTP is upstream_http.h and upstream_streams.h).
//
// What the contract asks beyond OpenAI's fields goes by the names vLLM and
// llama-server use (top_k, ignore_eos, stop_token_ids, add_special_tokens,
// add_generation_prompt, chat_template_kwargs), and only when it differs
// from the default, so a stricter server sees a plain OpenAI request for a
// plain job. A job's output format goes as OpenAI's response_format (on
// /chat/completions: the server holds its output to it). What no such
// server streams back (token ids, logprobs per token), a job may not ask
// for: INVALID_INPUT.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "runtime/runtime.h"
#include "runtime/streaming_generator.h"

namespace shoal::upstream {

// POST /embeddings: one call for the whole batch.
std::string EmbeddingsBody(std::string_view model, std::span<const EncodeInput* const> in);

// Fills out[i].dense (L2-normalized where the input asked) and out[i].tokens
// from an /embeddings reply for those inputs. The reply gives one token
// count for the call; each input is given a share by its length in bytes.
// INFERENCE_ERROR when the reply is not one vector per input.
Status ReadEmbeddings(std::string_view body, std::span<const EncodeInput* const> in,
                      std::span<EncodeOutput* const> out);

// The route and body of a streamed generation (/completions for a prompt,
// /chat/completions for messages), or INVALID_INPUT for what an
// OpenAI-compatible stream cannot carry.
struct GenerationCall {
  std::string path;
  std::string body;
};
// The logit adjustments an upstream generation passes on (OpenAI's).
std::vector<std::string> UpstreamAdjustments();

Result<GenerationCall> GenerationRequest(std::string_view model, const GenerationJob& job);

// One event of such a stream, read.
struct StreamEvent {
  bool done = false;           // the closing "[DONE]"
  std::string text;            // new text
  std::string finish_reason;   // set on the choice's last event
  bool has_usage = false;      // the usage event (stream_options.include_usage)
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
};

// INFERENCE_ERROR for an event that is not such a chunk (garbage) or that
// reports an error mid-stream (vLLM's {"error": ...}).
Status ReadStreamEvent(std::string_view data, bool chat, StreamEvent* event);

}  // namespace shoal::upstream
