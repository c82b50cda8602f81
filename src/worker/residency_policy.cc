#include "worker/residency_policy.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace shoal::worker {
namespace {

// Recency as a logical clock: each Loaded/Used takes the next tick, so two
// touches never tie even when the caller's timestamps do.
class RecencyPolicy : public EvictionPolicy {
 public:
  void Loaded(std::string_view id, uint64_t, std::chrono::nanoseconds, SteadyClock::time_point) override {
    Touch(id);
  }
  void Used(std::string_view id, uint64_t, SteadyClock::time_point) override {
    if (auto it = last_touch_.find(id); it != last_touch_.end()) it->second = ++tick_;
  }
  void Evicted(std::string_view id, SteadyClock::time_point) override {
    if (auto it = last_touch_.find(id); it != last_touch_.end()) last_touch_.erase(it);
  }
  void Rank(std::vector<std::string_view>& candidates, SteadyClock::time_point) const override {
    std::sort(candidates.begin(), candidates.end(),
              [&](std::string_view a, std::string_view b) { return Touched(a) < Touched(b); });
  }

 protected:
  void Touch(std::string_view id) {
    auto it = last_touch_.find(id);
    if (it == last_touch_.end()) it = last_touch_.emplace(std::string(id), 0).first;
    it->second = ++tick_;
  }
  uint64_t Touched(std::string_view id) const {
    auto it = last_touch_.find(id);
    return it == last_touch_.end() ? 0 : it->second;
  }

 private:
  uint64_t tick_ = 0;
  std::map<std::string, uint64_t, std::less<>> last_touch_;
};

class LruPolicy final : public RecencyPolicy {
 public:
  EvictionPolicyKind kind() const override { return EvictionPolicyKind::kLru; }
};

class CountPolicy final : public RecencyPolicy {
 public:
  explicit CountPolicy(size_t max_models) : max_models_(std::max<size_t>(1, max_models)) {}
  EvictionPolicyKind kind() const override { return EvictionPolicyKind::kCount; }
  size_t max_models() const override { return max_models_; }

 private:
  const size_t max_models_;
};

// GreedyDual-Size-Frequency with a decaying use count; recency (the base
// class) breaks ties.
class CostAwarePolicy final : public RecencyPolicy {
 public:
  // The use count halves every kUsesHalfLife without use. A plain count
  // keeps a model that was hot in an earlier phase of the traffic resident
  // long after it went cold (on the drifting trace of
  // bench/residency_policies.cc plain GDSF lost to LRU), and a capped one
  // cannot tell a model used a thousand times a minute from one used eight.
  static constexpr std::chrono::seconds kUsesHalfLife{30};

  EvictionPolicyKind kind() const override { return EvictionPolicyKind::kCostAware; }

  void Loaded(std::string_view id, uint64_t bytes, std::chrono::nanoseconds load_cost,
              SteadyClock::time_point now) override {
    RecencyPolicy::Loaded(id, bytes, load_cost, now);
    Entry& e = entries_[std::string(id)];
    // Seconds per byte: the reload cost of each byte an eviction frees.
    e.cost_per_byte = std::chrono::duration<double>(load_cost).count() /
                      static_cast<double>(std::max<uint64_t>(bytes, 1));
    // The load counts as a use, as in GDSF: a model is loaded because work
    // waits for it, and one that ranked below every other the moment it
    // arrived would be the next load's victim before its first batch ran.
    e.uses = 1;
    e.base = inflation_;
    e.at = now;
  }

  void Used(std::string_view id, uint64_t uses, SteadyClock::time_point now) override {
    RecencyPolicy::Used(id, uses, now);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    Entry& e = it->second;
    e.uses = Decayed(e, now) + static_cast<double>(uses);
    e.base = inflation_;
    e.at = now;
  }

  void Evicted(std::string_view id, SteadyClock::time_point now) override {
    RecencyPolicy::Evicted(id, now);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    // max: a victim that was not the lowest (the lowest was busy or pinned)
    // must not lower L; L only grows, or priorities would stop aging.
    inflation_ = std::max(inflation_, Priority(it->second, now));
    entries_.erase(it);
  }

  void Rank(std::vector<std::string_view>& candidates, SteadyClock::time_point now) const override {
    std::sort(candidates.begin(), candidates.end(), [&](std::string_view a, std::string_view b) {
      const double pa = Priority(a, now), pb = Priority(b, now);
      if (pa != pb) return pa < pb;
      return Touched(a) < Touched(b);
    });
  }

 private:
  struct Entry {
    double cost_per_byte = 0;
    double uses = 0;              // as of `at`
    double base = 0;              // L when it was last loaded or used
    SteadyClock::time_point at{};
  };

  static double Decayed(const Entry& e, SteadyClock::time_point now) {
    const double idle = std::chrono::duration<double>(now - e.at).count();
    return e.uses * std::exp2(-std::max(0.0, idle) / std::chrono::duration<double>(kUsesHalfLife).count());
  }
  // H = L (when last touched) + uses (decayed to now) × load cost / bytes.
  static double Priority(const Entry& e, SteadyClock::time_point now) {
    return e.base + Decayed(e, now) * e.cost_per_byte;
  }
  double Priority(std::string_view id, SteadyClock::time_point now) const {
    auto it = entries_.find(id);
    return it == entries_.end() ? 0 : Priority(it->second, now);
  }

  double inflation_ = 0;  // L
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace

Result<EvictionPolicyKind> ParseEvictionPolicyKind(std::string_view name) {
  if (name == "cost-aware") return EvictionPolicyKind::kCostAware;
  if (name == "lru") return EvictionPolicyKind::kLru;
  if (name == "count") return EvictionPolicyKind::kCount;
  return InvalidInput("eviction policy: expected cost-aware, lru or count, got \"" +
                      std::string(name) + "\"");
}

std::string_view EvictionPolicyName(EvictionPolicyKind kind) {
  switch (kind) {
    case EvictionPolicyKind::kCostAware:
      return "cost-aware";
    case EvictionPolicyKind::kLru:
      return "lru";
    case EvictionPolicyKind::kCount:
      return "count";
  }
  return "unknown";
}

std::unique_ptr<EvictionPolicy> MakeEvictionPolicy(EvictionPolicyKind kind, size_t max_models) {
  switch (kind) {
    case EvictionPolicyKind::kCostAware:
      return std::make_unique<CostAwarePolicy>();
    case EvictionPolicyKind::kLru:
      return std::make_unique<LruPolicy>();
    case EvictionPolicyKind::kCount:
      return std::make_unique<CountPolicy>(max_models);
  }
  return nullptr;
}

Residency::Residency(uint64_t budget_bytes, std::unique_ptr<EvictionPolicy> policy)
    : budget_bytes_(budget_bytes), policy_(std::move(policy)) {
  assert(policy_ != nullptr);
}

Result<std::vector<std::string>> Residency::PlanAdmit(std::string_view id, uint64_t bytes,
                                                      const std::function<bool(std::string_view)>& busy,
                                                      SteadyClock::time_point now) const {
  if (models_.find(id) != models_.end()) return std::vector<std::string>{};
  if (bytes > budget_bytes_) {
    return Status(Code::kNoCapacity, "model " + std::string(id) + " needs " +
                                         std::to_string(bytes) + " bytes, more than the budget " +
                                         std::to_string(budget_bytes_));
  }
  const size_t max_models = policy_->max_models();
  auto fits = [&](uint64_t used, size_t count) {
    return used + bytes <= budget_bytes_ && (max_models == 0 || count + 1 <= max_models);
  };

  uint64_t used = used_bytes_;
  size_t count = models_.size();
  if (fits(used, count)) return std::vector<std::string>{};

  std::vector<std::string_view> candidates;
  for (const auto& [name, model] : models_) {
    if (!model.pinned && !(busy && busy(name))) candidates.push_back(name);
  }
  policy_->Rank(candidates, now);

  std::vector<std::string> victims;
  for (std::string_view victim : candidates) {
    used -= models_.find(victim)->second.bytes;
    --count;
    victims.emplace_back(victim);
    if (fits(used, count)) return victims;
  }
  return Status(Code::kNoCapacity,
                "model " + std::string(id) + " (" + std::to_string(bytes) +
                    " bytes) does not fit: " + std::to_string(used) +
                    " bytes are pinned or busy of a budget of " + std::to_string(budget_bytes_) +
                    (max_models ? ", at most " + std::to_string(max_models) + " models" : ""));
}

void Residency::Loaded(std::string_view id, uint64_t bytes, bool pinned,
                       std::chrono::nanoseconds load_time, SteadyClock::time_point now) {
  // A reload (a new version) replaces the entry; it is not an eviction, so
  // the policy only sees Loaded, which restarts the model's record.
  if (auto it = models_.find(id); it != models_.end()) {
    used_bytes_ -= it->second.bytes;
    models_.erase(it);
  }
  models_.emplace(std::string(id), Model{bytes, pinned});
  used_bytes_ += bytes;
  policy_->Loaded(id, bytes, load_time, now);
  ++counters_.loads;

  // Keep the thrash histories bounded: drop those with no load in the window.
  std::erase_if(recent_loads_,
                [&](const auto& entry) { return now - entry.second.back() >= kThrashWindow; });
  auto& loads = recent_loads_[std::string(id)];
  loads.push_back(now);
  while (loads.size() > kThrashLoads) loads.pop_front();
}

void Residency::Evicted(std::string_view id, SteadyClock::time_point now) {
  auto it = models_.find(id);
  if (it == models_.end()) return;
  used_bytes_ -= it->second.bytes;
  policy_->Evicted(id, now);
  models_.erase(it);
  ++counters_.evictions;
}

void Residency::Used(std::string_view id, SteadyClock::time_point now, uint64_t uses) {
  if (models_.find(id) != models_.end()) policy_->Used(id, uses, now);
}

void Residency::SetPinned(std::string_view id, bool pinned) {
  if (auto it = models_.find(id); it != models_.end()) it->second.pinned = pinned;
}

uint64_t Residency::pinned_bytes() const {
  uint64_t bytes = 0;
  for (const auto& [id, model] : models_) bytes += model.pinned ? model.bytes : 0;
  return bytes;
}

bool Residency::Resident(std::string_view id) const { return models_.find(id) != models_.end(); }

bool Residency::Thrashing(std::string_view id, SteadyClock::time_point now) const {
  auto it = recent_loads_.find(id);
  if (it == recent_loads_.end() || it->second.size() < kThrashLoads) return false;
  // The oldest of the latest kThrashLoads loads is inside the window.
  return now - it->second.front() < kThrashWindow;
}

std::vector<ResidentInfo> Residency::Models() const {
  std::vector<ResidentInfo> out;
  out.reserve(models_.size());
  for (const auto& [id, model] : models_) out.push_back({id, model.bytes, model.pinned});
  return out;
}

}  // namespace shoal::worker
