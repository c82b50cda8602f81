// CanaryMonitor: what one gateway sees of the canaries in flight — per
// model id, the requests each side answered (the serving version, the
// canary's), how many of them failed (5xx) and how long they took; for a
// shadow canary also how alike the two answered the requests both answered
// (gateway/answer_comparison.h) — and the decision to end a canary whose
// version fails more than its profile allows (catalog/model_spec.h
// CanarySpec: `max_error_rate` of at least `min_requests`, and more often
// than the serving side) or agrees less (`min_cosine`, `min_agreement`
// over at least `min_requests` compared). The decision is made once per
// canary; ending it is the caller's (`on_trip`, the admin API: a
// compare-and-set on the id's head). Each gateway judges on its own
// traffic; the first to trip ends the canary for all.
//
// Threading: Record and RecordComparison from the lanes, Text and Stats
// from any thread; one mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "catalog/model_spec.h"
#include "common/clock.h"
#include "gateway/answer_comparison.h"

namespace shoal::gateway {

class CanaryMonitor {
 public:
  // Ends the canary of `model` (on version `version`), saying why.
  using TripFn =
      std::function<void(const std::string& model, uint32_t version, const std::string& why)>;
  explicit CanaryMonitor(TripFn on_trip) : on_trip_(std::move(on_trip)) {}

  struct Side {
    uint64_t requests = 0, errors = 0;
    double seconds = 0;  // their latencies, summed
  };
  struct View {
    uint32_t version = 0;  // the canary's version these counts are of
    Side serving{}, canary{};
    uint64_t compared = 0;  // shadow: requests whose two answers were compared
    AnswerComparison answers{};  // and how alike those were, summed

    // {"version", "serving": {"requests", "errors", "mean_ms"}, "canary":
    // {...}, "compared": {"requests", "mean_cosine", "min_cosine",
    // "agreement"}} (a measure none was taken of: null).
    std::string ToJson() const;
  };

  // A request for `model` under canary `canary` answered `status` after
  // `latency`, on the canary's side or the serving one.
  void Record(const std::string& model, const CanarySpec& canary, bool on_canary, int status,
              SteadyClock::duration latency);
  // A shadowed request of `model` that both sides answered, compared.
  void RecordComparison(const std::string& model, const CanarySpec& canary,
                        const AnswerComparison& compared);
  View Stats(const std::string& model) const;
  // Prometheus text: shoal_canary_requests_total, shoal_canary_errors_total
  // and shoal_canary_seconds_total {model, version, side}; for shadows
  // shoal_canary_compared_total, shoal_canary_mean_cosine and
  // shoal_canary_agreement {model, version}.
  std::string Text() const;

 private:
  // The View of `model` for `canary` (a new canary starts afresh); mu_ held.
  View& ViewOf(const std::string& model, const CanarySpec& canary);
  // Why `canary` should end on what `v` holds, once ("": it should not);
  // mu_ held.
  std::string Verdict(const std::string& model, const View& v, const CanarySpec& canary);

  TripFn on_trip_;
  mutable std::mutex mu_;
  std::map<std::string, View> views_;                   // guarded by mu_
  std::set<std::pair<std::string, uint32_t>> tripped_;  // guarded by mu_
};

}  // namespace shoal::gateway
