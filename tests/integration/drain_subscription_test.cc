// queue::DrainSubscription against a real nats-server: a "no responders"
// status (what a request nobody takes gets back, and what a JetStream
// publish gets while its stream has no leader) is consumed by cnats itself,
// and the messages queued behind it must still be drained in the same call:
// the lanes and workers drain only when their socket turns readable, so a
// message left behind waits for the next one to arrive.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "queue/loop_connection.h"
#include "queue/nats.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

TEST(DrainSubscription, DrainsWhatQueuesBehindANoRespondersStatus) {
  TestCluster cluster;
  queue::ConnectOptions co;
  co.url = cluster.nats_url();
  co.name = "drain-test";
  auto nc = queue::Connect(co);
  ASSERT_TRUE(nc.ok()) << nc.status().ToString();
  natsSubscription* raw = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&raw, nc->get(), "_INBOX.drain.>"), NATS_OK);
  queue::SubscriptionPtr sub(raw);

  // A request nobody takes: the server answers its reply subject with a 503.
  ASSERT_EQ(natsConnection_PublishRequestString(nc->get(), "nobody.listens.here", "_INBOX.drain.1", "?"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(nc->get(), "_INBOX.drain.2", "behind it"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc->get()), NATS_OK);
  // Both are queued once the server has sent them (the flush's PONG comes
  // after them on the same connection).
  int pending = 0;
  ASSERT_EQ(natsSubscription_GetPending(sub.get(), &pending, nullptr), NATS_OK);
  ASSERT_EQ(pending, 2);

  std::vector<std::string> drained;
  queue::DrainSubscription(sub.get(), [&](queue::Message m) { drained.emplace_back(m.payload()); });
  EXPECT_EQ(drained, std::vector<std::string>{"behind it"});
}

}  // namespace
}  // namespace shoal::testing
