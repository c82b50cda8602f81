// ModelDrafter: drafts with a smaller generator that shares the target's
// tokenizer (the profile's `speculative.draft`, a registered model the
// worker loads beside the target: ResidentModels). Each step it runs k
// steps of its own over every sequence that drafts, batched: the first
// catches its cache up with the sequence (the whole prompt, the first
// time; after that the tokens the target accepted or chose), each later
// one feeds the previous draft. A greedy sequence drafts the draft model's
// argmax; a sampling one draws from the draft model's distribution with the
// sequence's temperature, top-k and top-p, and hands that distribution on
// for the acceptance rule.
//
// The draft model's KV cache is its own (sized by its own profile), kept
// in blocks here; a sequence that finds no block drafts nothing that step.
//
// Threading: the engine's thread alone (the draft model's Forward is not
// used anywhere else).
#pragma once

#include "runtime/generator.h"
#include "worker/drafter.h"
#include "worker/kv_blocks.h"

namespace shoal::worker {

class ModelDrafter final : public Drafter {
 public:
  explicit ModelDrafter(Generator* draft);
  Status Propose(std::span<DraftAsk> asks, int threads) override;
  void Release(DraftState* state) override;

  // OK when `draft` can draft for `target`: both generate through the
  // worker's engine, and their vocabularies are the same tokens.
  static Status CheckCompatible(const Generator& target, const Generator& draft);

 private:
  Generator* draft_;
  KvBlocks blocks_;
  std::vector<float> logits_;
};

}  // namespace shoal::worker
