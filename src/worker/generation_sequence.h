// Sequence: one request in the generation engine (generation_engine.h) —
// internal to the engine's files (generation_engine.cc, the speculative
// part in generation_speculation.cc).
//
// Threading: the engine's thread alone, once admitted.
#pragma once

#include <memory>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "runtime/generator.h"
#include "runtime/logit_adjustments.h"
#include "runtime/sampler.h"
#include "runtime/structured/output_constraint.h"
#include "runtime/structured/tool_calls.h"
#include "runtime/text_stream.h"
#include "wire/generate.h"
#include "worker/drafter.h"
#include "worker/work_item.h"

namespace shoal::worker {

// Its work item, its tokens, where its keys and values are, and what it has
// produced but not yet published.
struct Sequence {
  WorkItem item;
  bool prepared = false;  // parsed and tokenized (once, even across preemptions)
  std::vector<int32_t> tokens;  // the prompt, then what it generated
  uint32_t prompt_len = 0;
  uint32_t max_new = 0;
  uint32_t computed = 0;   // positions whose keys/values are in the cache
  uint32_t published = 0;  // blocks offered to the prefix cache
  uint32_t cached_prompt = 0;
  std::vector<int32_t> table;  // KV block ids
  // A vision-language prompt's images (generation_images.cc): each one's
  // rows, where they stand, and the prefix cache's partition — the
  // adapter's name, plus the images' digest when there are some (their
  // placeholder tokens are alike, their keys and values are not).
  std::vector<std::vector<float>> image_rows;
  std::vector<PlacedEmbeddings> placed;
  std::string prefix_key;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<TextStream> text;
  std::unique_ptr<structured::OutputConstraint> format;  // null: free text
  std::unique_ptr<TokenPenalties> penalties;             // null: the logits as they are
  std::unique_ptr<structured::ToolCallStream> tool_calls;  // null: no tools, or tool_choice none
  structured::ToolCallSyntax tool_syntax{};
  bool parallel_tool_calls = true;
  std::unordered_set<int32_t> stop_ids;
  bool logprobs = false;
  uint32_t top_logprobs = 0;
  bool admitted_once = false;
  uint64_t seed = 0;
  // Speculation: the drafter's state, this step's drafts (and the
  // distributions they were drawn from), and the chunk that feeds them.
  DraftState draft;
  std::vector<int32_t> drafted;
  std::vector<std::vector<float>> drafted_q;
  std::vector<int32_t> feed;
  // Produced, not yet published.
  wire::GenerationChunk pending;
  uint32_t next_chunk = 0;
  SteadyClock::time_point started{}, first_token{}, last_token{};
  int64_t started_unix_us = 0;

  uint32_t generated() const { return static_cast<uint32_t>(tokens.size()) - prompt_len; }
};

// The draft distribution of a draft that was certain (Sampler::Verify).
inline const std::vector<float> kCertainDraft;

// A waiting sequence's class, for PlaceInLine (priority_line.h).
inline queue::Priority PriorityOf(const std::unique_ptr<Sequence>& s) { return s->item.priority; }

}  // namespace shoal::worker
