#include "worker/model_drafter.h"

#include <algorithm>

namespace shoal::worker {

ModelDrafter::ModelDrafter(Generator* draft)
    : draft_(draft), blocks_(draft->info().kv_blocks, draft->info().kv_block_tokens) {}

Status ModelDrafter::CheckCompatible(const Generator& target, const Generator& draft) {
  const size_t vocab = target.info().vocab_size;
  if (draft.info().vocab_size != vocab) {
    return InvalidInput("speculative.draft: its vocabulary has " + std::to_string(draft.info().vocab_size) +
                        " tokens, the model's " + std::to_string(vocab) + "; a draft must share the tokenizer");
  }
  for (size_t id = 0; id < vocab; ++id) {
    const int32_t t = static_cast<int32_t>(id);
    if (draft.TokenBytes(t) != target.TokenBytes(t)) {
      return InvalidInput("speculative.draft: token " + std::to_string(id) +
                          " stands for other text in the draft than in the model; a draft must share the tokenizer");
    }
  }
  return Status::Ok();
}

void ModelDrafter::Release(DraftState* state) {
  blocks_.Release(&state->table);
  state->computed = 0;
}

Status ModelDrafter::Propose(std::span<DraftAsk> asks, int threads) {
  const GeneratorInfo& info = draft_->info();
  std::vector<DraftAsk*> active;
  for (DraftAsk& a : asks) {
    // Its cache never holds the latest token: that one is fed below.
    a.state->computed = std::min<uint32_t>(a.state->computed, static_cast<uint32_t>(a.tokens.size()) - 1);
    a.k = std::min<uint32_t>(a.k, info.max_context > a.tokens.size() ? info.max_context - a.tokens.size() : 0);
    if (a.k == 0) continue;
    if (!a.state->sampler) a.state->sampler = draft_->NewSampler(*a.sampling, a.seed);
    a.proposed.reserve(a.k);  // fed from below: no reallocation while in a chunk
    active.push_back(&a);
  }
  std::vector<SequenceChunk> chunks;
  std::vector<DraftAsk*> owners;
  for (uint32_t j = 0; !active.empty(); ++j) {
    chunks.clear();
    owners.clear();
    for (DraftAsk* a : active) {
      const uint32_t len = static_cast<uint32_t>(a->tokens.size());
      // Step 0 catches up with the sequence; step j feeds draft j.
      const std::span<const int32_t> feed =
          j == 0 ? a->tokens.subspan(a->state->computed) : std::span<const int32_t>(&a->proposed[j - 1], 1);
      const uint32_t start = j == 0 ? a->state->computed : len + j - 1;
      if (!blocks_.Grow(&a->state->table, start + static_cast<uint32_t>(feed.size()))) {
        Release(a->state);  // no room: no drafts this step, a fresh start the next
        continue;
      }
      chunks.push_back({.tokens = feed, .start = start, .blocks = a->state->table, .logit_rows = 1, .lora = {},
                        .embeddings = {}});
      owners.push_back(a);
    }
    if (chunks.empty()) break;
    logits_.resize(chunks.size() * info.vocab_size);
    SHOAL_RETURN_IF_ERROR(draft_->Forward(chunks, logits_.data(), threads));
    active.clear();
    for (size_t c = 0; c < chunks.size(); ++c) {
      DraftAsk& a = *owners[c];
      a.state->computed = chunks[c].start + static_cast<uint32_t>(chunks[c].tokens.size());
      const float* row = logits_.data() + c * info.vocab_size;
      Sampler& sampler = *a.state->sampler;
      if (sampler.greedy()) {
        a.proposed.push_back(sampler.Next(row, info.vocab_size, nullptr));
      } else {
        a.q.emplace_back();
        sampler.Distribution(row, info.vocab_size, &a.q.back());
        a.proposed.push_back(sampler.DrawFrom(a.q.back()));
      }
      if (a.proposed.size() < a.k) active.push_back(&a);
    }
  }
  return Status::Ok();
}

}  // namespace shoal::worker
