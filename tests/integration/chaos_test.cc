// The chaos scenarios that fit CI's time (tests/chaos/scenarios.h; the whole
// suite is `make chaos`): a gateway stopped or killed mid-traffic and started
// again, and a 3-node JetStream cluster (network namespaces, root only)
// losing the work stream's leader. Each must lose nothing: every request is
// answered correctly or fails explicitly for its client.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "chaos/nats_cluster.h"
#include "chaos/scenarios.h"

namespace shoal::chaos {
namespace {

class Chaos : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shoal-chaos-test-XXXXXX";
    options_.dir = mkdtemp(tmpl);
    options_.shoal_binary = SHOAL_BINARY;
    options_.clients = 6;
    options_.warm_s = 2;
    options_.after_s = 3;
  }
  void TearDown() override {
    if (HasFailure()) return;  // keep the logs
    std::error_code ec;
    std::filesystem::remove_all(options_.dir, ec);
  }

  void ExpectNothingLost(const ScenarioResult& r) {
    ASSERT_TRUE(r.error.empty()) << r.error << " (logs in " << r.dir << ")";
    const Tally& t = r.tally;
    EXPECT_EQ(t.lost, 0) << "e.g. " << (t.lost_examples.empty() ? "" : t.lost_examples.front()) << " (logs in "
                         << r.dir << ")";
    EXPECT_EQ(t.sent, t.completed + t.failed_explicit + t.lost);
    EXPECT_GT(t.completed, 0);
    EXPECT_EQ(r.left_in_stream, 0u) << "every work item acknowledged in the end (" << r.ghosts_in_stream
                                    << " more acked but kept by nats-server; logs in " << r.dir << ")";
  }

  ScenarioOptions options_;
};

TEST_F(Chaos, AGatewayStoppedAndRestartedLosesNothing) { ExpectNothingLost(RunScenario("gateway_restart", options_)); }

TEST_F(Chaos, AGatewayKilledAndRestartedLosesNothing) { ExpectNothingLost(RunScenario("gateway_kill", options_)); }

TEST_F(Chaos, AJetStreamClusterLosingItsStreamLeaderLosesNothing) {
  if (std::string why = NetnsNatsCluster::WhyUnavailable(); !why.empty()) GTEST_SKIP() << why;
  const ScenarioResult r = RunScenario("nats_cluster_kill", options_);
  ExpectNothingLost(r);
  if (HasFatalFailure()) return;
  // Under steady load, some item went unstored while the stream elected a
  // leader (seconds), and was sent to a worker meanwhile.
  EXPECT_GT(r.hedged, 0u) << "no item hedged during the election (logs in " << r.dir << ")";
}

}  // namespace
}  // namespace shoal::chaos
