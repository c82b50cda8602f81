#include "worker/placement.h"

#include <algorithm>

namespace shoal::worker {
namespace {

bool Contains(const std::vector<std::string>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool Eligible(const PlacementPeer& p, std::string_view model, uint64_t bytes) {
  return Contains(p.serves, model) && p.budget >= p.pinned_bytes && p.budget - p.pinned_bytes >= bytes;
}

bool HasRoom(const PlacementPeer& p, uint64_t bytes) {
  return p.budget >= p.used_bytes && p.budget - p.used_bytes >= bytes;
}

// `peers` filtered by `keep`, highest rendezvous weight first — after those
// with room for `bytes` when `room_first`.
template <class Keep>
std::vector<const PlacementPeer*> Ranked(const std::vector<PlacementPeer>& peers, std::string_view model,
                                         Keep keep, bool room_first = false, uint64_t bytes = 0) {
  std::vector<const PlacementPeer*> out;
  for (const PlacementPeer& p : peers) {
    if (keep(p)) out.push_back(&p);
  }
  std::sort(out.begin(), out.end(), [&](const PlacementPeer* a, const PlacementPeer* b) {
    if (room_first && HasRoom(*a, bytes) != HasRoom(*b, bytes)) return HasRoom(*a, bytes);
    const uint64_t wa = RendezvousWeight(model, a->id), wb = RendezvousWeight(model, b->id);
    return wa != wb ? wa > wb : a->id < b->id;
  });
  return out;
}

}  // namespace

uint64_t RendezvousWeight(std::string_view model, std::string_view worker) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;  // FNV prime
    }
  };
  mix(model);
  mix(std::string_view("\0", 1));  // "ab"+"c" and "a"+"bc" differ
  mix(worker);
  // splitmix64's finalizer: FNV's low bits are weak for similar inputs.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

int DesiredReplicas(uint64_t waiting, int eligible) {
  if (waiting == 0 || eligible <= 0) return 0;
  const uint64_t want = 1 + waiting / kItemsPerExtraReplica;
  return static_cast<int>(std::min<uint64_t>(want, static_cast<uint64_t>(eligible)));
}

bool ShouldLoad(std::string_view model, uint64_t bytes, uint64_t waiting, std::string_view self,
                const std::vector<PlacementPeer>& peers) {
  int eligible = 0, holders = 0;
  for (const PlacementPeer& p : peers) {
    if (Contains(p.holds, model)) {
      ++holders;
      if (p.id == self) return false;  // already here
    } else if (Eligible(p, model, bytes)) {
      ++eligible;
    }
  }
  const int missing = DesiredReplicas(waiting, eligible + holders) - holders;
  if (missing <= 0) return false;
  const auto candidates = Ranked(
      peers, model, [&](const PlacementPeer& p) { return !Contains(p.holds, model) && Eligible(p, model, bytes); },
      /*room_first=*/true, bytes);
  for (int i = 0; i < missing && i < static_cast<int>(candidates.size()); ++i) {
    if (candidates[i]->id == self) return true;
  }
  return false;
}

bool ShouldRelease(std::string_view model, uint64_t bytes, uint64_t waiting, std::string_view self,
                   const std::vector<PlacementPeer>& peers, std::chrono::nanoseconds idle) {
  if (idle < kCoolAfter) return false;
  int eligible = 0;
  for (const PlacementPeer& p : peers) {
    if (Contains(p.holds, model) || Eligible(p, model, bytes)) ++eligible;
  }
  const int keep = std::max(1, DesiredReplicas(waiting, eligible));
  const auto holders = Ranked(peers, model, [&](const PlacementPeer& p) { return Contains(p.holds, model); });
  for (int i = 0; i < keep && i < static_cast<int>(holders.size()); ++i) {
    if (holders[i]->id == self) return false;  // one of the replicas to keep
  }
  return true;
}

}  // namespace shoal::worker
