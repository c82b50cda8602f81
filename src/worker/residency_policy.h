// Residency: which models are loaded on one device, within its memory budget,
// and which to evict to make room for another (docs/architecture.md, "Residency").
//
// The rule, for a model `id` of `bytes` that is to be loaded:
//   - bytes > budget: NO_CAPACITY (it could never fit);
//   - candidates = resident models that are neither pinned nor busy (batches
//     in flight): pinned ones count against the budget but are never
//     victims, and evicting a busy one would pull weights from under a
//     running batch;
//   - the policy ranks the candidates, first victim first; victims are taken
//     in that order until used + bytes <= budget and, for a policy with a
//     model limit, resident count + 1 <= max_models;
//   - if the candidates run out first: NO_CAPACITY (the caller retries once
//     something is unpinned or goes idle; nothing is evicted for nothing).
//
// Policies (EvictionPolicyKind):
//   kCostAware  GreedyDual-Size-Frequency (Cherkasova 1998). Each resident
//               model has a priority H = L + uses × load_cost / bytes, its
//               L taken when it was loaded (uses = 1: the work it was
//               loaded for) or last used, its uses counted per item run and
//               halved every 30 s without use, so a once-hot model ages
//               out. The lowest H goes first: rarely used, cheap to reload
//               per byte freed. After an eviction L = max(L, victim's
//               H); a model loaded or used later starts from the higher L,
//               so one no longer used falls behind and eventually goes.
//   kLru        the least recently used goes first.
//   kCount      as Ollama / llama.cpp (OLLAMA_MAX_LOADED_MODELS): at most
//               max_models resident whatever their size, LRU first; and LRU
//               again if the bytes still do not fit.
// Ties (equal H) go least recently used first. "Recently" is call order
// (Loaded and Used), not timestamps, so equal or coarse clock readings still
// give one order.
//
// Thrashing: a model loaded kThrashLoads or more times within kThrashWindow
// keeps being evicted and reloaded: the budget is too small for the working
// set (or the policy is wrong for it). Residency reports it; the caller logs
// and exports it.
//
// Invariants:
//   - used_bytes() == sum of resident models' bytes;
//   - used_bytes() <= budget_bytes() when every load followed a plan
//     (Loaded records what happened; it does not refuse);
//   - the policy knows exactly the resident models.
//
// Time comes in as arguments (no clock of its own), so tests need no sleeps.
//
// Threading: none. Not thread-safe; the caller (one per device) serialises
// every call. PlanAdmit is const: it only plans. The caller evicts what the
// plan says, calls Evicted for each, loads, then calls Loaded.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace shoal::worker {

enum class EvictionPolicyKind { kCostAware, kLru, kCount };

// "cost-aware", "lru", "count"; anything else is INVALID_INPUT.
Result<EvictionPolicyKind> ParseEvictionPolicyKind(std::string_view name);
std::string_view EvictionPolicyName(EvictionPolicyKind kind);

// Ranks resident models for eviction. It sees every load, use and eviction
// of the residency it belongs to, and keeps what it needs per model.
class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;

  virtual EvictionPolicyKind kind() const = 0;
  // The most models resident at once; 0: no limit but memory.
  virtual size_t max_models() const { return 0; }

  virtual void Loaded(std::string_view id, uint64_t bytes, std::chrono::nanoseconds load_cost,
                      SteadyClock::time_point now) = 0;
  virtual void Used(std::string_view id, uint64_t uses, SteadyClock::time_point now) = 0;
  virtual void Evicted(std::string_view id, SteadyClock::time_point now) = 0;

  // Sorts `candidates` (resident ids) so that the first is the first victim.
  virtual void Rank(std::vector<std::string_view>& candidates, SteadyClock::time_point now) const = 0;
};

// `max_models` is used by kCount only (at least 1).
std::unique_ptr<EvictionPolicy> MakeEvictionPolicy(EvictionPolicyKind kind, size_t max_models = 0);

struct ResidentInfo {
  std::string id;
  uint64_t bytes = 0;
  bool pinned = false;
};

class Residency {
 public:
  static constexpr size_t kThrashLoads = 3;
  static constexpr std::chrono::seconds kThrashWindow{60};

  struct Counters {
    uint64_t loads = 0;
    uint64_t evictions = 0;
  };

  Residency(uint64_t budget_bytes, std::unique_ptr<EvictionPolicy> policy);

  // The models to evict, in order, to make room for `id` of `bytes`; empty
  // when it fits already or is resident. Never a pinned model, never one
  // for which busy(id) is true. NO_CAPACITY when bytes > budget or when it
  // cannot fit even after every evictable model goes.
  Result<std::vector<std::string>> PlanAdmit(std::string_view id, uint64_t bytes,
                                             const std::function<bool(std::string_view)>& busy,
                                             SteadyClock::time_point now) const;

  // `load_time`: what loading it took (or an estimate); the cost-aware
  // policy weighs it. Loading a resident model again replaces its entry.
  void Loaded(std::string_view id, uint64_t bytes, bool pinned, std::chrono::nanoseconds load_time,
              SteadyClock::time_point now);
  void Evicted(std::string_view id, SteadyClock::time_point now);  // no-op when not resident
  // `uses` items of it ran (for the cost-aware policy, a count that decays).
  void Used(std::string_view id, SteadyClock::time_point now, uint64_t uses = 1);
  void SetPinned(std::string_view id, bool pinned);

  bool Resident(std::string_view id) const;
  bool Thrashing(std::string_view id, SteadyClock::time_point now) const;

  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t pinned_bytes() const;  // of used_bytes(), what pinned models hold
  uint64_t budget_bytes() const { return budget_bytes_; }
  std::vector<ResidentInfo> Models() const;  // by id
  Counters counters() const { return counters_; }
  const EvictionPolicy& policy() const { return *policy_; }

 private:
  struct Model {
    uint64_t bytes = 0;
    bool pinned = false;
  };

  const uint64_t budget_bytes_;
  std::unique_ptr<EvictionPolicy> policy_;
  std::map<std::string, Model, std::less<>> models_;
  uint64_t used_bytes_ = 0;
  Counters counters_;
  // The latest (up to kThrashLoads) load times per model, resident or not;
  // histories older than kThrashWindow are dropped on the next load.
  std::map<std::string, std::deque<SteadyClock::time_point>, std::less<>> recent_loads_;
};

}  // namespace shoal::worker
