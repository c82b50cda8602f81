// Shadow canaries (catalog/model_spec.h CanarySpec, mode shadow): each
// request in the canary's share is copied to the candidate version — the
// same items, as prepared for the serving version, on the same lane — and
// once both have answered, the copy's answer is compared with the serving
// one's (answer_comparison.h) into the CanaryMonitor, then dropped. The
// client gets the serving version's answer and never waits for the copy;
// its key is not charged for the copy, and its hang-up does not cancel it.
//
// Copied: encode, score and extract requests. Not copied: generation (a
// sampled text is no answer to compare: try a generator with a split
// canary) and tokenize (no model output). A lane with kShedShadowsAt
// requests pending copies none: a shadow never makes a busy gateway busier.
//
// Threading: a pair's two requests belong to one lane; the pair is used on
// that lane's thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gateway/canary_monitor.h"
#include "gateway/pending.h"

namespace shoal::gateway {

inline constexpr size_t kShedShadowsAt = 512;

// Whether `p` is a request a shadow canary copies.
bool Shadows(const PendingRequest& p);

class ShadowPair {
 public:
  ShadowPair(CanaryMonitor* monitor, std::string model, CanarySpec canary, Task task)
      : monitor_(monitor), model_(std::move(model)), canary_(canary), task_(task) {}

  // `p`, either side, finished (the PendingTable's on_finish): its answer is
  // kept until the other's is in; then, when both succeeded, compared.
  void Finished(const PendingRequest& p);

 private:
  struct Answer {
    bool in = false, ok = false;
    std::vector<std::string> items;
  };
  CanaryMonitor* const monitor_;
  const std::string model_;
  const CanarySpec canary_;
  const Task task_;
  Answer serving_, candidate_;
};

// The copy of `p` for `candidate`, a new request of p's lane (`seq`, `id`)
// with p's items, priority and deadline; both get one ShadowPair. The
// caller gives it a responder, and inserts and submits it.
std::shared_ptr<PendingRequest> ShadowOf(PendingRequest& p,
                                         std::shared_ptr<const ModelSpec> candidate, uint64_t seq,
                                         std::string id, CanaryMonitor* monitor);

}  // namespace shoal::gateway
