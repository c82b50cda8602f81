// Placement without a scheduler: which worker loads a model that has work
// waiting and too few workers holding it. Every worker answers the same
// question from the same view — the heartbeats in shoal_workers and the
// work stream's per-model message counts — so they agree without talking:
//
//   eligible  workers that serve the model (its pool and runtime: the
//             heartbeat's `models`) and whose budget, less what they have
//             pinned, could hold it;
//   holders   workers that have it loaded or are loading it (or failed to
//             load it: they answer its requests with MODEL_LOAD_FAILED, and
//             a second try elsewhere would fail the same way);
//   desired   replicas: none while nothing waits; one, plus one for every
//             kItemsPerExtraReplica items waiting, at most every eligible
//             worker — a hot model gains replicas as its backlog grows;
//   decision  when holders < desired, the eligible non-holders ranked —
//             those with free memory for it first (no eviction needed),
//             then by rendezvous hash of (model, worker), highest-random-
//             weight hashing: every worker computes the same order, and a
//             worker leaving moves only its own models — and the first
//             (desired − holders) of them load it.
//
// Replicas leave as a model cools: a holder that is not among the first
// `max(desired, 1)` holders by the same ranking, and that has run nothing
// of it for kCoolAfter, releases it. Memory pressure evicts as well
// (residency_policy.h); pinned models leave neither way.
//
// Views are up to a heartbeat old, so two workers can load the same model
// at once now and then; the cost is one extra replica, which cools off.
//
// Pure logic on a snapshot: no clock, no locks, no NATS.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shoal::worker {

// One worker as placement sees it (its heartbeat, or this worker's own
// state for itself).
struct PlacementPeer {
  std::string id;
  uint64_t budget = 0;         // memory budget, bytes
  uint64_t pinned_bytes = 0;   // held by pinned models (never freed)
  uint64_t used_bytes = 0;     // held by every loaded model
  std::vector<std::string> serves;  // models it may load
  std::vector<std::string> holds;   // loaded, loading or failed here
};

inline constexpr uint64_t kItemsPerExtraReplica = 256;
inline constexpr std::chrono::seconds kCoolAfter{30};

// The rendezvous weight of `worker` for `model`: a 64-bit hash of the pair
// (FNV-1a, then a finalizer), the same on every machine.
uint64_t RendezvousWeight(std::string_view model, std::string_view worker);

// How many workers should hold a model with `waiting` messages, given
// `eligible` workers that could.
int DesiredReplicas(uint64_t waiting, int eligible);

// Whether `self` should load `model` (of `bytes`, `waiting` messages) now.
// `peers` includes `self`.
bool ShouldLoad(std::string_view model, uint64_t bytes, uint64_t waiting, std::string_view self,
                const std::vector<PlacementPeer>& peers);

// Whether `self`, a holder of `model`, should let it go: an extra replica
// that has been idle here for `idle`.
bool ShouldRelease(std::string_view model, uint64_t bytes, uint64_t waiting, std::string_view self,
                   const std::vector<PlacementPeer>& peers, std::chrono::nanoseconds idle);

}  // namespace shoal::worker
