// Generator: what a decoder-only model offers the worker's generation engine
// (worker/generation_engine.h) — its tokenizer and chat template, a sampler
// for its logits, and one forward step over a batch of sequences whose keys
// and values live in a paged KV cache.
//
// The KV cache is a pool of `kv_blocks` blocks of `kv_block_tokens`
// positions each, owned by the model (its size counts in memory_bytes()).
// Which blocks hold which sequence is the engine's bookkeeping
// (worker/kv_blocks.h): a step names, per sequence, the block table that
// covers its positions. A step writes the keys and values of the new tokens
// into their blocks and reads every earlier position of the sequence from
// its blocks, so blocks holding a shared prompt prefix can be read by many
// sequences at once, as long as only full blocks are shared (nobody writes
// into them).
//
// Threading: the tokenizer side is immutable and thread-safe. Forward writes
// the KV pool: one Forward at a time per model (the engine's thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/sampler.h"

namespace shoal {

// A part of a message's content: a text, or where an image stands (the
// template sees {"type": "image"}; the image itself goes to EmbedImage).
struct ChatPart {
  bool image = false;
  std::string text{};
};

// One message of a conversation, as the chat template reads it.
struct ChatTurn {
  std::string role{};     // system, developer, user, assistant, tool
  std::string content{};  // its text
  // An assistant's calls, a JSON array as chat templates read them
  // ([{"id", "type": "function", "function": {"name", "arguments": {...}}}],
  // the arguments an object); empty: none.
  std::string tool_calls_json{};
  std::string tool_call_id{};  // a tool's answer: the call it answers
  // Its content's parts in order, when it carries images (content then
  // holds its text parts joined); empty: content is its one text.
  std::vector<ChatPart> parts{};
};

// A model's own sampling defaults (Hugging Face generation_config.json):
// what a request that leaves the field out samples with.
struct SamplingDefaults {
  std::optional<float> temperature, top_p, repetition_penalty;
  std::optional<int32_t> top_k;
};

struct GeneratorInfo {
  size_t vocab_size = 0;          // logits per position
  uint32_t max_context = 0;       // positions a sequence may use (prompt + output)
  uint32_t kv_block_tokens = 16;  // positions per KV block
  uint32_t kv_blocks = 0;         // blocks in the pool
  std::vector<int32_t> eos_ids;   // end-of-sequence tokens
  SamplingDefaults sampling_defaults;
  // A step over up to this many rows costs about what a step over one does
  // (reading the weights dominates it): speculative decoding drafts only
  // within it, so it never slows a batch that already fills a step.
  uint32_t flat_cost_rows = 1;
  // A vision-language model's images (EmbedImage): a rendered prompt spells
  // `image_token` once where each image stands, and the image takes
  // `image_positions` positions there. 0: the model reads no images.
  int32_t image_token = -1;
  uint32_t image_positions = 0;
};

// Embeddings that stand in a sequence's prompt in place of its tokens' own:
// rows [position, position + count), hidden_size floats each (an image's,
// from EmbedImage).
struct PlacedEmbeddings {
  uint32_t position = 0;
  uint32_t count = 0;
  const float* rows = nullptr;
};

// One sequence's share of a step: new tokens at positions [start, start + n).
struct SequenceChunk {
  std::span<const int32_t> tokens{};
  uint32_t start = 0;
  // Block ids covering positions [0, start + tokens.size()).
  std::span<const int32_t> blocks{};
  // Rows of logits that come back: after each of its last `logit_rows`
  // tokens (0: none; 1: its next token's; more: a speculative step checking
  // drafted tokens), at most tokens.size().
  uint32_t logit_rows = 0;
  // The LoRA adapter the sequence runs under (one of the model's
  // UpdateLoras list); empty: the base model.
  std::string_view lora{};
  // The sequence's placed embeddings (its images), all of them: each row
  // whose position this chunk feeds is read in place of the token's.
  std::span<const PlacedEmbeddings> embeddings{};
};

class Generator {
 public:
  virtual ~Generator() = default;
  virtual const GeneratorInfo& info() const = 0;

  // Prompt text → token ids. A completion prompt gets the tokenizer's own
  // special tokens (e.g. Llama-3's <|begin_of_text|>); a rendered chat
  // prompt already spells them, so it asks for none.
  virtual Result<std::vector<int32_t>> EncodePrompt(std::string_view text,
                                                    bool add_special_tokens) const = 0;
  // Chat messages → the prompt text, through the model's chat template;
  // `kwargs_json` (a JSON object, or empty) adds template variables.
  // INVALID_INPUT when the template refuses the conversation.
  virtual Result<std::string> RenderChat(std::span<const ChatTurn> messages, bool add_generation_prompt,
                                         std::string_view kwargs_json) const = 0;
  // The bytes a token stands for in the output text (byte-level BPE mapped
  // back to bytes, SentencePiece's ▁ as a space, <0xNN> as the byte); may be
  // part of a UTF-8 character. Special tokens give their text.
  virtual std::string TokenBytes(int32_t id) const = 0;

  // A sampler for one sequence's next tokens (sampler.h); a runtime may give
  // its own.
  virtual std::unique_ptr<Sampler> NewSampler(const SamplingConfig& config, uint64_t seed) const {
    return std::make_unique<Sampler>(config, seed);
  }

  // An image's rows for a prompt: info().image_positions rows of the
  // decoder's width, from the image's encoded bytes (JPEG, PNG, WebP, GIF).
  // INVALID_INPUT when it does not decode or the model reads no images.
  virtual Result<std::vector<float>> EmbedImage(std::string_view encoded, int threads) {
    (void)encoded, (void)threads;
    return InvalidInput("this model reads no images");
  }

  // One step: appends each chunk's tokens to its sequence's cache and
  // writes the logits each chunk asks for to `logits` (vocab_size floats
  // per row: chunk by chunk, each chunk's rows in position order). Uses at most
  // `threads` cores.
  virtual Status Forward(std::span<const SequenceChunk> chunks, float* logits, int threads) = 0;
};

}  // namespace shoal
