// queue::WorkerRegistry against a real nats-server: answers are a sign of
// life besides heartbeats. A worker whose last heartbeat is long stale
// counts as live once a gateway hears it answer; a worker never heard of,
// or gone with its heartbeat deleted, does not come back that way.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/clock.h"
#include "queue/worker_registry.h"
#include "support/test_cluster.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

bool Lists(const queue::WorkerRegistry& registry, const std::string& id) {
  const auto live = registry.Live();
  return std::any_of(live.begin(), live.end(), [&](const queue::WorkerInfo& w) { return w.id == id; });
}

TEST(WorkerRegistry, AWorkerWhoseAnswersArriveIsLiveWhateverItsHeartbeats) {
  TestCluster cluster;
  kvStore* bucket = cluster.control_plane().workers.get();
  auto registry = queue::WorkerRegistry::Open(bucket);
  ASSERT_TRUE(registry.ok()) << registry.status().ToString();
  queue::WorkerInfo old, fresh;
  old.id = "w-old";
  old.models = {"team/m"};
  old.ts_ms = UnixMillis() - 60000;  // its last heartbeat a minute ago
  fresh.id = "w-fresh";
  fresh.models = {"team/other"};
  fresh.ts_ms = UnixMillis();
  ASSERT_TRUE(queue::PutHeartbeat(bucket, old).ok());
  ASSERT_TRUE(queue::PutHeartbeat(bucket, fresh).ok());
  ASSERT_TRUE(WaitFor([&] { return Lists(**registry, "w-fresh"); }));  // the watch delivers in order
  EXPECT_FALSE((*registry)->AnyServing("team/m"));

  (*registry)->Answered("w-never-heard");
  EXPECT_EQ((*registry)->Live().size(), 1u);
  (*registry)->Answered("w-old");
  EXPECT_TRUE((*registry)->AnyServing("team/m"));
  EXPECT_TRUE(Lists(**registry, "w-old"));

  ASSERT_TRUE(queue::DeleteHeartbeat(bucket, "w-fresh").ok());  // stopped cleanly
  ASSERT_TRUE(WaitFor([&] { return !Lists(**registry, "w-fresh"); }));
  (*registry)->Answered("w-fresh");  // a result still in flight
  EXPECT_FALSE(Lists(**registry, "w-fresh"));
}

}  // namespace
}  // namespace shoal::testing
