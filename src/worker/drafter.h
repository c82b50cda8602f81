// Drafter: what proposes tokens for speculative decoding in the generation
// engine (generation_engine.h). Each step, a sequence that is decoding may
// get up to k drafted tokens; the model then reads its last token and the
// drafts in one chunk, with a row of logits after each, and keeps the
// drafts the sampler's rule accepts (Sampler::Verify) plus one token of its
// own — the first it disagreed on, or the one after the last draft. With
// greedy decoding the output is the model's alone, token for token; with
// sampling its distribution is unchanged. A step that accepts a of k drafts
// yields a + 1 tokens for about the cost of one, when reading the weights
// dominates a step, as it does for a small batch.
//
// Two kinds (the profile's `speculative.draft`): a draft model — a smaller
// generator with the same tokenizer (model_drafter.h) — and prompt lookup,
// which copies what followed the last occurrence of the sequence's latest
// n-gram (ngram_drafter.h).
//
// Threading: the engine's thread alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/status.h"
#include "runtime/sampler.h"

namespace shoal::worker {

// One sequence's drafting state, kept with the sequence.
struct DraftState {
  std::vector<int32_t> table;        // the draft model's KV blocks for it
  uint32_t computed = 0;             // its positions in the draft model's cache
  std::unique_ptr<Sampler> sampler;  // the draft model's own draws
  double acceptance = 0.8;           // recent share of its drafts accepted
};

// A sequence's request for drafts, and the drafts.
struct DraftAsk {
  std::span<const int32_t> tokens;  // the sequence so far
  const SamplingConfig* sampling = nullptr;  // the sequence's (a draft model samples alike)
  uint64_t seed = 0;                // for the draft model's draws
  DraftState* state = nullptr;
  uint32_t k = 0;  // the most to propose
  // Out: the drafted tokens, and per token the distribution it was drawn
  // from (vocabulary-sized; left empty when the draft was certain: prompt
  // lookup, or a greedy sequence).
  std::vector<int32_t> proposed;
  std::vector<std::vector<float>> q;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Fills each ask's `proposed` (possibly with fewer than k, or none).
  virtual Status Propose(std::span<DraftAsk> asks, int threads) = 0;
  // The sequence's first `valid` tokens are final (the rest of what was
  // drafted was refused): what the drafter holds past them is stale.
  virtual void Rewind(DraftState* state, uint32_t valid) {
    state->computed = std::min(state->computed, valid);
  }
  // The sequence left (finished, or preempted): its state goes back.
  virtual void Release(DraftState* state) { state->computed = 0; }
};

// How many tokens to draft for a sequence whose recent acceptance rate is
// `acceptance`: the run of acceptances to expect, a / (1 - a), within
// [1, k_max]; none below kMinAcceptance, where checking drafts costs more
// than they give. Such sequences still draft one token every kProbeSteps
// steps (all in the same step, so the draft model runs once for them), so
// that a draft that starts agreeing is noticed.
inline constexpr double kMinAcceptance = 0.3;
inline constexpr uint32_t kProbeSteps = 8;
uint32_t DraftLength(double acceptance, uint32_t k_max);

}  // namespace shoal::worker
