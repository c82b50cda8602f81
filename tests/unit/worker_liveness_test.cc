// Worker liveness from heartbeats (queue/worker_registry.h): stale after
// stale_after — unless the whole bucket fell silent, when workers are judged
// as of the last heartbeat heard, for a bounded grace (unbounded while the
// watch cannot be started again).
#include <gtest/gtest.h>

#include "queue/worker_registry.h"

namespace shoal::queue {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kStale{4000};
constexpr milliseconds kGrace{15000};
const SteadyClock::time_point t0{seconds(1000)};

bool Live(milliseconds heard, milliseconds latest, milliseconds now) {
  return WorkerRegistry::IsLive(t0 + heard, t0 + latest, t0 + now, kStale, kGrace);
}

TEST(WorkerLiveness, AWorkerOthersOutliveGoesStale) {
  // Another worker's heartbeats keep coming: the bucket is fine, this one died.
  EXPECT_TRUE(Live(milliseconds(0), milliseconds(3000), milliseconds(3999)));
  EXPECT_FALSE(Live(milliseconds(0), milliseconds(9000), milliseconds(9500)));
}

TEST(WorkerLiveness, ASilentBucketKeepsTheLastKnownWorkersForTheGrace) {
  // Two workers, both last heard at 0 and 500 ms; then nothing from anyone.
  EXPECT_TRUE(Live(milliseconds(0), milliseconds(500), milliseconds(10000)));
  EXPECT_TRUE(Live(milliseconds(500), milliseconds(500), milliseconds(19000)));
  // A worker already stale when the bucket went quiet stays stale.
  EXPECT_FALSE(Live(milliseconds(0), milliseconds(4500), milliseconds(10000)));
  // Past stale_after + grace, silence means what it says.
  EXPECT_FALSE(Live(milliseconds(500), milliseconds(500), milliseconds(500 + 4000 + 15000)));
}

TEST(WorkerLiveness, ABlindWatchKeepsTheLastKnownWorkersPastTheGrace) {
  // The watch cannot be started again: silence is no news of anyone's death.
  const auto live = [](milliseconds heard, milliseconds latest, milliseconds now) {
    return WorkerRegistry::IsLive(t0 + heard, t0 + latest, t0 + now, kStale, kGrace, /*blind=*/true);
  };
  EXPECT_TRUE(live(milliseconds(500), milliseconds(500), milliseconds(500 + 4000 + 60000)));
  // A worker already stale when the bucket went quiet stays stale.
  EXPECT_FALSE(live(milliseconds(0), milliseconds(4500), milliseconds(60000)));
}

TEST(WorkerLiveness, NothingEverHeardIsNobody) {
  EXPECT_FALSE(WorkerRegistry::IsLive(SteadyClock::time_point{}, SteadyClock::time_point{}, t0,
                                      kStale, kGrace));
}

}  // namespace
}  // namespace shoal::queue
