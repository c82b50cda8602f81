// Placement decisions on hand-made views: every worker, asking the same
// question of the same view, must reach the same answer.
#include "worker/placement.h"

#include <gtest/gtest.h>

namespace shoal::worker {
namespace {

using std::chrono::seconds;

constexpr uint64_t kMB = 1 << 20;

PlacementPeer Peer(const std::string& id, std::vector<std::string> holds = {}, uint64_t budget = 100 * kMB,
                   uint64_t pinned = 0) {
  return {id, budget, pinned, /*used_bytes=*/0, {"m/a", "m/b", "m/c", "m/big"}, std::move(holds)};
}

// Which of `peers` would load `model`, each asking for itself.
std::vector<std::string> Loaders(const std::string& model, uint64_t bytes, uint64_t waiting,
                                 const std::vector<PlacementPeer>& peers) {
  std::vector<std::string> out;
  for (const auto& p : peers) {
    if (ShouldLoad(model, bytes, waiting, p.id, peers)) out.push_back(p.id);
  }
  return out;
}

TEST(Placement, RendezvousWeightsAreStableAndSpread) {
  EXPECT_EQ(RendezvousWeight("m/a", "w1"), RendezvousWeight("m/a", "w1"));
  EXPECT_NE(RendezvousWeight("m/a", "w1"), RendezvousWeight("m/a", "w2"));
  EXPECT_NE(RendezvousWeight("ab", "c"), RendezvousWeight("a", "bc"));
  // Over many models, each of three workers is first for about a third.
  int first[3] = {0, 0, 0};
  const char* workers[3] = {"w1", "w2", "w3"};
  for (int m = 0; m < 3000; ++m) {
    const std::string model = "model-" + std::to_string(m);
    int best = 0;
    for (int w = 1; w < 3; ++w) {
      if (RendezvousWeight(model, workers[w]) > RendezvousWeight(model, workers[best])) best = w;
    }
    ++first[best];
  }
  for (int n : first) EXPECT_NEAR(n, 1000, 120);
}

TEST(Placement, NothingWaitingLoadsNothing) {
  const std::vector<PlacementPeer> peers = {Peer("w1"), Peer("w2"), Peer("w3")};
  EXPECT_TRUE(Loaders("m/a", kMB, 0, peers).empty());
  EXPECT_EQ(DesiredReplicas(0, 3), 0);
}

TEST(Placement, ExactlyOneWorkerLoadsAModelNobodyHolds) {
  const std::vector<PlacementPeer> peers = {Peer("w1"), Peer("w2"), Peer("w3")};
  for (const char* model : {"m/a", "m/b", "m/c"}) {
    EXPECT_EQ(Loaders(model, kMB, 5, peers).size(), 1u) << model;
  }
  // Whoever holds it already, nobody else loads it.
  const auto loader = Loaders("m/a", kMB, 5, peers).front();
  std::vector<PlacementPeer> after = peers;
  for (auto& p : after) {
    if (p.id == loader) p.holds = {"m/a"};
  }
  EXPECT_TRUE(Loaders("m/a", kMB, 5, after).empty());
}

TEST(Placement, AWorkerThatLeavesHandsItsModelsToTheNextInRank) {
  std::vector<PlacementPeer> peers = {Peer("w1"), Peer("w2"), Peer("w3")};
  const auto first = Loaders("m/b", kMB, 5, peers).front();
  std::erase_if(peers, [&](const PlacementPeer& p) { return p.id == first; });
  const auto second = Loaders("m/b", kMB, 5, peers);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second.front(), first);
}

TEST(Placement, AHotModelGainsReplicasAsItsBacklogGrows) {
  EXPECT_EQ(DesiredReplicas(1, 3), 1);
  EXPECT_EQ(DesiredReplicas(kItemsPerExtraReplica, 3), 2);
  EXPECT_EQ(DesiredReplicas(100 * kItemsPerExtraReplica, 3), 3);  // at most every eligible worker
  std::vector<PlacementPeer> peers = {Peer("w1", {"m/a"}), Peer("w2"), Peer("w3")};
  EXPECT_TRUE(Loaders("m/a", kMB, 10, peers).empty());
  EXPECT_EQ(Loaders("m/a", kMB, kItemsPerExtraReplica + 1, peers).size(), 1u);
  EXPECT_EQ(Loaders("m/a", kMB, 10 * kItemsPerExtraReplica, peers).size(), 2u);
}

TEST(Placement, OnlyWorkersWithRoomOutsideTheirPinnedModelsAreEligible) {
  // w1 and w2 are full of pinned models; only w3 can hold 50 MB.
  const std::vector<PlacementPeer> peers = {Peer("w1", {}, 100 * kMB, 80 * kMB),
                                            Peer("w2", {}, 40 * kMB), Peer("w3")};
  EXPECT_EQ(Loaders("m/big", 50 * kMB, 3, peers), std::vector<std::string>{"w3"});
  // A worker that does not serve the model (another runtime, --model) is not eligible either.
  std::vector<PlacementPeer> narrow = {Peer("w1"), Peer("w2")};
  narrow[0].serves = {"m/b"};
  EXPECT_EQ(Loaders("m/a", kMB, 3, narrow), std::vector<std::string>{"w2"});
}

TEST(Placement, AWorkerWithRoomGoesBeforeOneThatWouldHaveToEvict) {
  std::vector<PlacementPeer> peers = {Peer("w1"), Peer("w2"), Peer("w3")};
  const auto first = Loaders("m/a", 10 * kMB, 5, peers).front();
  for (auto& p : peers) {
    if (p.id == first) p.used_bytes = 95 * kMB;  // full: it would have to evict
  }
  const auto loaders = Loaders("m/a", 10 * kMB, 5, peers);
  ASSERT_EQ(loaders.size(), 1u);
  EXPECT_NE(loaders.front(), first);
  // When nobody has room, rank alone decides.
  for (auto& p : peers) p.used_bytes = 95 * kMB;
  EXPECT_EQ(Loaders("m/a", 10 * kMB, 5, peers), std::vector<std::string>{first});
}

TEST(Placement, AWorkerWhereTheLoadFailedStillHoldsIt) {
  // "holds" includes failed: the model's requests get MODEL_LOAD_FAILED there,
  // and nobody else tries the same files.
  const std::vector<PlacementPeer> peers = {Peer("w1", {"m/a"}), Peer("w2"), Peer("w3")};
  EXPECT_TRUE(Loaders("m/a", kMB, 50, peers).empty());
}

TEST(Placement, ExtraReplicasGoWhenTheyCoolTheFirstStays) {
  const std::vector<PlacementPeer> peers = {Peer("w1", {"m/c"}), Peer("w2", {"m/c"}), Peer("w3", {"m/c"})};
  std::vector<std::string> releasing;
  for (const auto& p : peers) {
    EXPECT_FALSE(ShouldRelease("m/c", kMB, 0, p.id, peers, seconds(5))) << "not cold yet";
    if (ShouldRelease("m/c", kMB, 0, p.id, peers, kCoolAfter)) releasing.push_back(p.id);
  }
  EXPECT_EQ(releasing.size(), 2u) << "one replica stays";
  // While its backlog calls for three, none goes.
  for (const auto& p : peers) {
    EXPECT_FALSE(ShouldRelease("m/c", kMB, 10 * kItemsPerExtraReplica, p.id, peers, kCoolAfter));
  }
}

}  // namespace
}  // namespace shoal::worker
