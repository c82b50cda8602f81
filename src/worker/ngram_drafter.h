// NgramDrafter: prompt lookup — drafting without a draft model. The
// sequence's last n tokens (n from kMaxN down to kMinN) are looked for
// earlier in the sequence; what followed their latest earlier occurrence is
// proposed. It pays off where outputs copy their input (extraction,
// summaries that quote, code edits, JSON echoing a schema) and costs almost
// nothing where they do not: no match, no drafts.
//
// Threading: the engine's thread alone.
#pragma once

#include "worker/drafter.h"

namespace shoal::worker {

class NgramDrafter final : public Drafter {
 public:
  static constexpr uint32_t kMaxN = 3;
  static constexpr uint32_t kMinN = 1;
  Status Propose(std::span<DraftAsk> asks, int threads) override;
};

}  // namespace shoal::worker
