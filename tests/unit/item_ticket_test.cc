// The worker's accounting of an item (worker/item_ticket.h) and the gate a
// drain waits on (common/gate.h).
#include "worker/item_ticket.h"

#include <gtest/gtest.h>

#include <thread>

namespace shoal::worker {
namespace {

TEST(ItemTicket, CountsQueuedThenInFlightAndGivesBackOnce) {
  Gate gate;
  ServedModel m;
  {
    ItemTicket t(&m, *gate.TryEnter());
    EXPECT_EQ(m.queued.load(), 1);
    t.Start();
    EXPECT_EQ(m.queued.load(), 0);
    EXPECT_EQ(m.in_flight.load(), 1);
    t.Requeue();  // a preempted sequence
    EXPECT_EQ(m.queued.load(), 1);
    EXPECT_EQ(m.in_flight.load(), 0);
    t.Start();
    ItemTicket moved = std::move(t);  // the item moves: its ticket with it
    EXPECT_EQ(m.in_flight.load(), 1);
    EXPECT_EQ(gate.count(), 1u);
  }
  EXPECT_EQ(m.queued.load(), 0);
  EXPECT_EQ(m.in_flight.load(), 0);
  EXPECT_EQ(gate.count(), 0u);
}

TEST(Gate, ADrainWaitsForTheLastHolderAndRefusesNewcomers) {
  Gate gate;
  auto holder = gate.TryEnter();
  ASSERT_TRUE(holder);
  gate.Close();
  EXPECT_FALSE(gate.TryEnter()) << "closed: nothing new enters";
  EXPECT_FALSE(gate.WaitEmpty(SteadyClock::now() + std::chrono::milliseconds(20))) << "a holder is still in";
  std::thread leave([h = std::move(*holder)]() mutable { h.Release(); });
  EXPECT_TRUE(gate.WaitEmpty(SteadyClock::now() + std::chrono::seconds(60))) << "woken by the release";
  leave.join();
  EXPECT_EQ(gate.count(), 0u);
}

}  // namespace
}  // namespace shoal::worker
