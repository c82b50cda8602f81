// The dashboard's versions panel (dashboard.h): for each model id with
// versions, which one serves, the rollback target, the candidates — each
// with its precision, a quantized variant's judgement and its evaluation
// reports — and a canary in flight with this gateway's counts of both
// sides (canary_monitor.h).
//
//   [{"id", "serving", "rollback_target", "canary": null | {the canary
//     (catalog/model_spec.h CanarySpec::ToJson), and once this gateway has
//     seen it "serving", "canary" and "compared" (CanaryMonitor::View)},
//     "versions": [{"version", "state", "precision", "owner",
//                   "registered_unix_ms", "variant": null | {"precision",
//                   "of", "passed"}, "evaluations": [{"evaluation",
//                   "passed", "metrics"}]}]}]
//
// The `shoal_model_versions` bucket is read at most every 10 s (it changes
// only on admin calls: a few KV reads per id, not one per poll); the canary
// counts are live.
//
// Threading: Json runs on the dashboard's thread only.
#pragma once

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "gateway/canary_monitor.h"
#include "queue/nats.h"

namespace shoal::gateway {

class VersionsPanel {
 public:
  // Neither owned; `canaries` may be null.
  VersionsPanel(kvStore* versions, const CanaryMonitor* canaries)
      : versions_(versions), canaries_(canaries) {}

  nlohmann::json Json();

 private:
  nlohmann::json Read() const;  // the bucket's part

  kvStore* versions_;
  const CanaryMonitor* canaries_;
  SteadyClock::time_point read_at_{};
  nlohmann::json cached_ = nlohmann::json::array();
};

}  // namespace shoal::gateway
