#include "worker/residency_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shoal::worker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Victims = std::vector<std::string>;

const SteadyClock::time_point kT0{};

bool NoneBusy(std::string_view) { return false; }

Residency Make(EvictionPolicyKind kind, uint64_t budget, size_t max_models = 0) {
  return Residency(budget, MakeEvictionPolicy(kind, max_models));
}

// Loads (unpinned) and uses `id` once, as a request that missed would.
void LoadAndUse(Residency& r, std::string_view id, uint64_t bytes,
                milliseconds load = milliseconds(100), SteadyClock::time_point now = kT0) {
  r.Loaded(id, bytes, /*pinned=*/false, load, now);
  r.Used(id, now);
}

// Plans, evicts and loads as the worker does; returns the victims.
Victims Admit(Residency& r, std::string_view id, uint64_t bytes,
              milliseconds load = milliseconds(100), SteadyClock::time_point now = kT0) {
  auto plan = r.PlanAdmit(id, bytes, NoneBusy, now);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return {};
  for (const auto& victim : *plan) r.Evicted(victim, now);
  LoadAndUse(r, id, bytes, load, now);
  return *plan;
}

TEST(Residency, LruEvictsTheLeastRecentlyUsed) {
  Residency r = Make(EvictionPolicyKind::kLru, 300);
  LoadAndUse(r, "a", 100);
  LoadAndUse(r, "b", 100);
  LoadAndUse(r, "c", 100);
  r.Used("a", kT0);  // b is now the least recently used, then c
  EXPECT_EQ(r.PlanAdmit("d", 100, NoneBusy, kT0).value(), (Victims{"b"}));
  EXPECT_EQ(r.PlanAdmit("d", 200, NoneBusy, kT0).value(), (Victims{"b", "c"}));
}

TEST(Residency, PlanIsEmptyWhenItFitsOrIsResident) {
  Residency r = Make(EvictionPolicyKind::kLru, 300);
  LoadAndUse(r, "a", 200);
  EXPECT_TRUE(r.PlanAdmit("b", 100, NoneBusy, kT0).value().empty());
  EXPECT_TRUE(r.PlanAdmit("a", 200, NoneBusy, kT0).value().empty());
}

TEST(Residency, CountEvictsByCountEvenWhenBytesFit) {
  Residency r = Make(EvictionPolicyKind::kCount, 1000, /*max_models=*/2);
  LoadAndUse(r, "a", 10);
  LoadAndUse(r, "b", 10);
  EXPECT_EQ(r.PlanAdmit("c", 10, NoneBusy, kT0).value(), (Victims{"a"}));
  // The LRU baseline with the same budget evicts nothing.
  Residency lru = Make(EvictionPolicyKind::kLru, 1000);
  LoadAndUse(lru, "a", 10);
  LoadAndUse(lru, "b", 10);
  EXPECT_TRUE(lru.PlanAdmit("c", 10, NoneBusy, kT0).value().empty());
}

TEST(Residency, CountAlsoEvictsWhenBytesDoNotFit) {
  Residency r = Make(EvictionPolicyKind::kCount, 300, /*max_models=*/3);
  LoadAndUse(r, "a", 100);
  LoadAndUse(r, "b", 150);
  // Two models of at most three, but 250 + 100 bytes exceed 300.
  EXPECT_EQ(r.PlanAdmit("c", 100, NoneBusy, kT0).value(), (Victims{"a"}));
}

// Budget 1000; small (100 B, used often), expensive (300 B, 5 s to load,
// used once), big (500 B, cheap to load, used once, most recently).
Residency ThreeModels(EvictionPolicyKind kind) {
  Residency r = Make(kind, 1000);
  LoadAndUse(r, "small", 100, milliseconds(100));
  for (int i = 0; i < 9; ++i) r.Used("small", kT0);
  LoadAndUse(r, "expensive", 300, milliseconds(5000));
  LoadAndUse(r, "big", 500, milliseconds(200));
  return r;
}

TEST(Residency, CostAwareEvictsTheBigRarelyUsedModelFirst) {
  Residency r = ThreeModels(EvictionPolicyKind::kCostAware);
  // H: small 10 × 0.1 s / 100 B, expensive 5 s / 300 B, big 0.2 s / 500 B.
  EXPECT_EQ(r.PlanAdmit("new", 300, NoneBusy, kT0).value(), (Victims{"big"}));
  // LRU would drop the small hot model and the expensive one instead.
  Residency lru = ThreeModels(EvictionPolicyKind::kLru);
  EXPECT_EQ(lru.PlanAdmit("new", 300, NoneBusy, kT0).value(), (Victims{"small", "expensive"}));
}

TEST(Residency, CostAwareTiesGoLeastRecentlyUsedFirst) {
  Residency r = Make(EvictionPolicyKind::kCostAware, 200);
  LoadAndUse(r, "a", 100);
  LoadAndUse(r, "b", 100);
  EXPECT_EQ(r.PlanAdmit("c", 100, NoneBusy, kT0).value(), (Victims{"a"}));
}

// Room for two: "hot" was used 20 times, then never again; a stream of
// one-off models passes through the other slot, one every `gap`. Returns
// which newcomer evicted hot (-1: none did).
int OneOffsUntilHotGoes(std::chrono::seconds gap) {
  Residency r = Make(EvictionPolicyKind::kCostAware, 200);
  LoadAndUse(r, "hot", 100);
  r.Used("hot", kT0, 19);
  for (int i = 0; i < 200; ++i) {
    const Victims victims = Admit(r, "cold" + std::to_string(i), 100, milliseconds(100), kT0 + (i + 1) * gap);
    if (std::find(victims.begin(), victims.end(), "hot") != victims.end()) return i;
  }
  return -1;
}

TEST(Residency, CostAwareLetsAModelThatWentColdGo) {
  // Each eviction raises L, so the newcomers' priority overtakes hot's...
  const int at_once = OneOffsUntilHotGoes(std::chrono::seconds(0));
  EXPECT_GE(at_once, 3) << "a hot model must outlive a few one-off models";
  EXPECT_GE(at_once, 0) << "inflation must age a model that is no longer used";
  // ...and sooner when time passes: its uses halve every 30 s unused.
  const int over_minutes = OneOffsUntilHotGoes(std::chrono::seconds(10));
  EXPECT_GE(over_minutes, 1);
  EXPECT_LT(over_minutes, at_once) << "decay must let a once-hot model go sooner";
}

TEST(Residency, PinnedIsNeverEvicted) {
  Residency r = Make(EvictionPolicyKind::kLru, 300);
  r.Loaded("pinned", 200, /*pinned=*/true, milliseconds(100), kT0);
  LoadAndUse(r, "a", 100);
  r.Used("a", kT0);
  EXPECT_EQ(r.PlanAdmit("b", 100, NoneBusy, kT0).value(), (Victims{"a"}));
  auto plan = r.PlanAdmit("c", 200, NoneBusy, kT0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kNoCapacity);

  r.SetPinned("pinned", false);
  EXPECT_EQ(r.PlanAdmit("c", 200, NoneBusy, kT0).value(), (Victims{"pinned"}));
}

TEST(Residency, BusyIsNeverEvicted) {
  Residency r = Make(EvictionPolicyKind::kCostAware, 200);
  LoadAndUse(r, "a", 100);
  LoadAndUse(r, "b", 100);
  auto a_busy = [](std::string_view id) { return id == "a"; };
  EXPECT_EQ(r.PlanAdmit("c", 100, a_busy, kT0).value(), (Victims{"b"}));
  auto both_busy = [](std::string_view) { return true; };
  auto plan = r.PlanAdmit("c", 100, both_busy, kT0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kNoCapacity);
}

TEST(Residency, MoreThanTheBudgetNeverFits) {
  Residency r = Make(EvictionPolicyKind::kLru, 300);
  auto plan = r.PlanAdmit("huge", 301, NoneBusy, kT0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kNoCapacity);
  EXPECT_TRUE(r.PlanAdmit("exact", 300, NoneBusy, kT0).ok());
}

TEST(Residency, UsedBytesFollowLoadsAndEvictions) {
  Residency r = Make(EvictionPolicyKind::kLru, 1000);
  EXPECT_EQ(r.used_bytes(), 0u);
  LoadAndUse(r, "a", 100);
  LoadAndUse(r, "b", 250);
  EXPECT_EQ(r.used_bytes(), 350u);
  r.Loaded("a", 120, false, milliseconds(100), kT0);  // a reload replaces, not adds
  EXPECT_EQ(r.used_bytes(), 370u);
  r.Evicted("b", kT0);
  r.Evicted("b", kT0);  // not resident: nothing changes
  r.Evicted("never-loaded", kT0);
  EXPECT_EQ(r.used_bytes(), 120u);
  EXPECT_EQ(r.budget_bytes(), 1000u);
  ASSERT_EQ(r.Models().size(), 1u);
  EXPECT_EQ(r.Models()[0].id, "a");
  EXPECT_EQ(r.Models()[0].bytes, 120u);
  EXPECT_EQ(r.counters().loads, 3u);
  EXPECT_EQ(r.counters().evictions, 1u);
}

TEST(Residency, ThrashingIsThreeLoadsWithinTheWindow) {
  Residency r = Make(EvictionPolicyKind::kLru, 1000);
  auto load_at = [&](seconds t) {
    r.Evicted("m", kT0);
    r.Loaded("m", 100, false, milliseconds(100), kT0 + t);
  };
  load_at(seconds(0));
  load_at(seconds(20));
  EXPECT_FALSE(r.Thrashing("m", kT0 + seconds(20)));  // two loads only
  load_at(seconds(40));
  EXPECT_TRUE(r.Thrashing("m", kT0 + seconds(40)));
  EXPECT_TRUE(r.Thrashing("m", kT0 + seconds(59)));
  EXPECT_FALSE(r.Thrashing("m", kT0 + seconds(60)));  // the first load left the window
  EXPECT_FALSE(r.Thrashing("other", kT0 + seconds(40)));

  // Loads spread wider than the window are not thrashing.
  load_at(seconds(200));
  load_at(seconds(240));
  load_at(seconds(290));
  EXPECT_FALSE(r.Thrashing("m", kT0 + seconds(290)));
}

TEST(EvictionPolicyKind, Parses) {
  EXPECT_EQ(ParseEvictionPolicyKind("cost-aware").value(), EvictionPolicyKind::kCostAware);
  EXPECT_EQ(ParseEvictionPolicyKind("lru").value(), EvictionPolicyKind::kLru);
  EXPECT_EQ(ParseEvictionPolicyKind("count").value(), EvictionPolicyKind::kCount);
  for (std::string_view bad : {"", "LRU", "cost_aware", "gdsf"}) {
    auto kind = ParseEvictionPolicyKind(bad);
    ASSERT_FALSE(kind.ok()) << bad;
    EXPECT_EQ(kind.status().code(), Code::kInvalidInput);
  }
  for (auto kind :
       {EvictionPolicyKind::kCostAware, EvictionPolicyKind::kLru, EvictionPolicyKind::kCount}) {
    EXPECT_EQ(ParseEvictionPolicyKind(EvictionPolicyName(kind)).value(), kind);
    EXPECT_EQ(MakeEvictionPolicy(kind, 4)->kind(), kind);
  }
}

}  // namespace
}  // namespace shoal::worker
