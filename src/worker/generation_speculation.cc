// The generation engine's speculative decoding (generation_engine.h,
// "Speculation"; drafter.h): which sequences draft how many tokens this
// step. (Step checks the drafts, Pick keeps or refuses each.)
#include <algorithm>

#include "common/log.h"
#include "worker/generation_engine.h"
#include "worker/generation_sequence.h"

namespace shoal::worker {

void GenerationEngine::Draft(uint32_t budget) {
  const GeneratorInfo& info = gen_->info();
  const bool probe = ++draft_steps_ % kProbeSteps == 0;
  std::vector<DraftAsk> asks;
  std::vector<Sequence*> askers;
  for (const auto& r : running_) {
    Sequence& s = *r;
    if (s.tokens.size() - s.computed != 1 || budget == 0 || Paused(s)) continue;
    // A sampling sequence held to a format: its masked distribution is not
    // the sampler's, so the acceptance rule would not keep it exact.
    if (s.format && !s.sampler->greedy()) continue;
    const uint32_t len = static_cast<uint32_t>(s.tokens.size());
    uint32_t k = DraftLength(s.draft.acceptance, draft_k_);
    if (k == 0 && probe) k = 1;  // does it agree by now?
    k = std::min({k, budget, info.max_context - len, s.max_new - s.generated() - 1});
    // Room for the drafts' positions, leaving a block per running sequence.
    if (k == 0 || blocks_.available() <= running_.size() || !blocks_.Grow(&s.table, len + k)) continue;
    budget -= k;
    asks.push_back({.tokens = s.tokens, .sampling = &s.sampler->config(), .seed = s.seed ^ 0x5bd1e995u /* the draft's own stream */,
                    .state = &s.draft, .k = k, .proposed = {}, .q = {}});
    askers.push_back(&s);
  }
  if (asks.empty()) return;
  if (Status st = drafter_->Propose(asks, threads_); !st.ok()) {
    spdlog::warn("worker: {}: drafting failed, decoding without drafts this step: {}", model_->spec->id,
                 st.message());
    return;
  }
  for (size_t i = 0; i < asks.size(); ++i) {
    askers[i]->drafted = std::move(asks[i].proposed);
    askers[i]->drafted_q = std::move(asks[i].q);
  }
}

}  // namespace shoal::worker
