// StreamingGenerator: what a decoder offers when its runtime schedules its
// own sequences (llama.cpp's continuous batching, an upstream server), in
// place of the step-by-step Generator (generator.h) the worker's generation
// engine drives. The worker submits a job, relays the updates it streams,
// and may cancel it; batching sequences together is the runtime's business.
//
// A job ends with exactly one final update (`final`), after any number of
// chunks: finished (finish_reason "stop" or "length"), cancelled
// ("cancelled"), or failed (`status` not ok: INVALID_INPUT for a prompt the
// model refuses, e.g. over its context; INFERENCE_ERROR when the engine
// failed; NO_CAPACITY when the runtime is going away).
//
// Threading: Start and Cancel may be called from any thread. The sink is
// called from the runtime's threads (or from Start itself, for a job that
// fails at once; never from Cancel), one call at a time per job, in order;
// it must not block for long (it publishes, it does not wait on clients)
// and must not call Start or Cancel. The model outlives its jobs' final
// updates (the worker cancels them and waits before unloading).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/generator.h"
#include "runtime/logit_adjustments.h"
#include "runtime/sampler.h"

namespace shoal {

// The shape a job's output must take (OpenAI's response_format). A runtime
// that cannot hold its output to it fails the job with INVALID_INPUT; one
// that can writes nothing else (a job cut short by max_tokens or a stop
// string may end before its document does).
struct OutputFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema };
  Kind kind = Kind::kText;
  std::string schema_name;  // kJsonSchema: the client's name for it
  std::string schema_json;  // kJsonSchema: the JSON Schema's text
};

struct GenerationJob {
  // The prompt: text (tokenized with the model's own special tokens when
  // add_special_tokens), or, when `chat`, messages the runtime renders with
  // the model's chat template.
  bool chat = false;
  std::string prompt;
  bool add_special_tokens = true;
  std::vector<ChatTurn> messages;
  bool add_generation_prompt = true;
  std::string chat_template_kwargs_json;  // a JSON object, or empty

  uint32_t max_tokens = 0;  // 0: until a stop or the context is full
  SamplingConfig sampling;
  uint64_t seed = 0;
  std::vector<std::string> stop;        // stop strings, not part of the output
  std::vector<int32_t> stop_token_ids;  // besides the model's end-of-sequence tokens
  bool ignore_eos = false;
  bool logprobs = false;  // the log-probability of each chosen token
  std::string lora;       // empty: the base model
  OutputFormat format;
  // Penalties, biases and min_tokens (logit_adjustments.h). A generator
  // that cannot apply one it is asked for fails the job with INVALID_INPUT
  // naming it (Runtime::logit_adjustments).
  LogitAdjustments adjustments;
};

struct GenerationUpdate {
  std::string text;                // new text since the last update (whole UTF-8 characters)
  std::vector<int32_t> token_ids;  // new tokens since the last update
  std::vector<float> logprobs;     // one per token, when asked
  bool final = false;
  // On the final update:
  Status status;               // not ok: the job failed (text may be empty)
  std::string finish_reason;   // "stop", "length", "cancelled"
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
};

class StreamingGenerator {
 public:
  using Sink = std::function<void(GenerationUpdate&&)>;

  virtual ~StreamingGenerator() = default;

  // Sequences it runs at once (the worker pulls no more than this).
  virtual uint32_t max_sequences() const = 0;

  // Starts a job; its updates go to `sink` (possibly before Start returns).
  // Returns a handle for Cancel, unique for the model's lifetime.
  virtual uint64_t Start(GenerationJob job, Sink sink) = 0;

  // Ends a job early: its final update says "cancelled" (or whatever it
  // ended with first). Unknown or finished handles are ignored.
  virtual void Cancel(uint64_t handle) = 0;
};

}  // namespace shoal
