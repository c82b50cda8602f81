// Generation on the wire: the request a gateway queues for a generative
// model, and the chunks a worker streams back, as MessagePack (generate.cc
// has the fields). JSON is only at the HTTP edge.
//
// Work (gateway → JetStream, task generate): one message per request, item
// 0 (work_message.h), whose body is the request (AppendGenerateWork). The
// three HTTP APIs — OpenAI chat completions, OpenAI completions, native
// /v1/generate/{model} — all parse into one GenerateRequest, so the worker
// reads one format.
//
// Replies (worker → core NATS, to the work's reply subject): a stream of
// chunks, each a reply (work_message.h) with "seq" 0, 1, 2, … per attempt
// and, on the last, "final"; the body is a GenerationChunk (AppendChunk). A
// failure is an error reply, and ends the stream.
//
// A redelivered request (its worker died) starts again at seq 0; the
// gateway relays only the chunk it expects next, so a client never sees a
// token twice. Workers derive the sampling seed from the request id when the
// request gives none, so a retry regenerates the same tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::wire {

inline constexpr size_t kMaxStopStrings = 4;  // as OpenAI
inline constexpr size_t kMaxLogitBias = 1024;  // tokens a request may bias
inline constexpr uint32_t kMaxTopLogprobs = 20;  // as OpenAI
inline constexpr uint32_t kMaxChoices = 128;     // n, as OpenAI

// A function call a model made (OpenAI's tool_calls[]).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object's text
};

// A part of a message whose content carries images: a text, or an image's
// encoded bytes (JPEG, PNG, WebP, GIF).
struct ContentPart {
  bool image = false;
  std::string data;
};

struct ChatMessage {
  std::string role{};   // system, user, assistant, tool, ...
  std::string content{};  // text parts of an OpenAI content array, concatenated
  std::vector<ToolCall> tool_calls{};  // assistant: the calls it made
  std::string tool_call_id{};        // tool: the call it answers
  // When its content has image parts: every part in order (content still
  // holds the text parts joined); empty otherwise.
  std::vector<ContentPart> parts{};
};

// OpenAI's tool_choice.
struct ToolChoice {
  enum class Kind { kAuto, kNone, kRequired, kFunction };
  Kind kind = Kind::kAuto;
  std::string name;  // kFunction
};

// The sampling fields a model's generation_config.json may give defaults
// for (SamplingParams::unsaid).
enum SamplingDefault : uint8_t {
  kDefaultTemperature = 1,
  kDefaultTopP = 2,
  kDefaultTopK = 4,
  kDefaultRepetitionPenalty = 8,
};
inline constexpr uint8_t kAllSamplingDefaults = 15;

struct SamplingParams {
  uint32_t max_tokens = 0;  // 0: until a stop or the model's context is full
  float temperature = 1.0f;  // 0: greedy
  float top_p = 1.0f;        // (0, 1]
  int32_t top_k = 0;         // 0: off
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;          // stop strings (not part of the output)
  std::vector<int32_t> stop_token_ids;    // besides the model's end-of-sequence tokens
  bool ignore_eos = false;                // keep going past end-of-sequence
  bool logprobs = false;                  // log-probability of each chosen token
  uint32_t top_logprobs = 0;              // with logprobs: the most likely alternatives per token, ≤ 20
  // Logit adjustments (runtime/logit_adjustments.h has their definitions).
  float presence_penalty = 0;
  float frequency_penalty = 0;
  float repetition_penalty = 1;
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, bias
  uint32_t min_tokens = 0;
  // SamplingDefault bits of the fields the client left out: where the model
  // has defaults of its own (generation_config.json), they replace the
  // values above. 0: every value as it is here.
  uint8_t unsaid = 0;

  bool adjusts_logits() const {
    return presence_penalty != 0 || frequency_penalty != 0 || repetition_penalty != 1 || !logit_bias.empty() ||
           min_tokens > 0;
  }
};

// OpenAI's response_format: the shape the output must take. The native
// route adds a regular expression and a list of choices.
struct ResponseFormat {
  enum class Type { kText, kJsonObject, kJsonSchema, kRegex, kChoice };
  Type type = Type::kText;
  std::string name;         // kJsonSchema: json_schema.name
  std::string schema_json;  // kJsonSchema: json_schema.schema, as text
  std::string pattern;      // kRegex
  std::vector<std::string> choices;  // kChoice

  // The bytes it carries, for the size limit.
  size_t bytes() const {
    size_t n = schema_json.size() + pattern.size();
    for (const std::string& c : choices) n += c.size();
    return n;
  }
};

struct GenerateRequest {
  enum class Kind { kCompletion, kChat };
  Kind kind = Kind::kCompletion;
  std::string model;
  std::string prompt;                 // kCompletion
  std::vector<ChatMessage> messages;  // kChat
  bool add_generation_prompt = true;  // kChat
  // Extra variables for the chat template (e.g. {"enable_thinking": false}),
  // a JSON object; empty for none.
  std::string chat_template_kwargs_json;
  SamplingParams sampling;
  ResponseFormat response_format;  // chat and native routes
  // Chat: the functions the model may call, a JSON array of {"type":
  // "function", "function": {"name", "description", "parameters"}} as the
  // chat template reads it; empty: none.
  std::string tools_json;
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  // OpenAI's n: outputs for the one prompt (chat and completions). Not in
  // the work body: the gateway queues one item per output, all with this
  // body, and the worker tells them apart by the item index.
  uint32_t n = 1;
  bool stream = false;
  bool include_usage = false;  // OpenAI stream_options.include_usage
  // The native body's "lora" (the adapter to generate under). Not part of
  // the work's body: the gateway sends the adapter in the work header,
  // as for every task (work_message.h), and the worker reads it there.
  std::string lora;
};

// The work message's body, appended to `out`, and back. Decode validates
// what the HTTP parsers validate (a worker trusts nothing on the queue).
void AppendGenerateWork(const GenerateRequest& r, std::string* out);
Status DecodeGenerateWork(std::string_view msgpack, GenerateRequest* r);

// Why a sequence ended (OpenAI's finish_reason).
enum class FinishReason { kNone, kStop, kLength, kToolCalls };
std::string_view FinishReasonName(FinishReason r);  // "", "stop", "length", "tool_calls"

// One of a position's most likely tokens (top_logprobs).
struct TopLogprob {
  int32_t id = 0;
  std::string token;  // its bytes (may be part of a UTF-8 character)
  float logprob = 0;
};

struct GenerationChunk {
  std::string text;                // new text since the previous chunk (UTF-8, whole characters)
  std::vector<int32_t> token_ids;  // new tokens since the previous chunk
  std::vector<float> logprobs;     // one per token in token_ids, when asked
  std::vector<std::vector<TopLogprob>> top_logprobs;  // one list per token, when asked (most likely first)
  // On the final chunk only:
  FinishReason finish = FinishReason::kNone;
  std::vector<ToolCall> tool_calls;  // the calls the output made (kToolCalls); its text is what came outside them
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t cached_prompt_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  double ttft_ms = 0;                 // from the start of the attempt to the first token
  double itl_ms = 0;                  // mean time between later tokens
  double queue_ms = 0;                // in the queue before a worker started it
};

// A chunk as a reply's body, appended to `out` (after the reply header), and back.
void AppendChunk(const GenerationChunk& c, std::string* out);
Status DecodeChunk(std::string_view msgpack, GenerationChunk* c);

}  // namespace shoal::wire
